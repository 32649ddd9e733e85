import LivelineAMQP
import LivelineLogging
import Logging
import PostgresNIO

/// Retries what a worker needs before it can start (the broker, the store) with backoff,
/// logging each failed attempt, so workers may start before their dependencies do (a
/// Kubernetes rollout, `docker compose up`). A mistake that waiting cannot fix (refused
/// credentials, a TLS failure, a bad setting) fails at once.
public struct StartupRetry: Sendable {
    /// Give up after this long; the startup probes allow 5 minutes.
    public var limit: Duration
    public var initialDelay: Duration
    public var maximumDelay: Duration

    public init(limit: Duration = .seconds(300), initialDelay: Duration = .milliseconds(500), maximumDelay: Duration = .seconds(15)) {
        self.limit = limit
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
    }

    /// Runs `attempt` until it succeeds, a fatal error, or the limit.
    public func run<T>(
        _ what: String, logger: Logger, isFatal: (any Error) -> Bool = StartupRetry.isFatal,
        _ attempt: () async throws -> T
    ) async throws -> T {
        let deadline = ContinuousClock.now + limit
        var delay = initialDelay
        var number = 1
        while true {
            do {
                let result = try await attempt()
                if number > 1 { logger.notice("\(what) reached", metadata: RuntimeLogKey.metadata([.attempt: "\(number)"])) }
                return result
            } catch {
                if isFatal(error) || ContinuousClock.now + delay > deadline {
                    logger.error(
                        "\(what) unreachable; giving up",
                        metadata: RuntimeLogKey.metadata([.attempt: "\(number)", .error: "\(error)"]))
                    throw error
                }
                logger.warning(
                    "\(what) unreachable; retrying",
                    metadata: RuntimeLogKey.metadata([.attempt: "\(number)", .retryIn: "\(delay)", .error: "\(error)"]))
                try await Task.sleep(for: delay)
                delay = min(delay * 2, maximumDelay)
                number += 1
            }
        }
    }

    /// Refused credentials, TLS failures and bad arguments do not heal by waiting; nor
    /// does a setting, or a database that refuses the login or does not exist.
    public static func isFatal(_ error: any Error) -> Bool {
        if let error = error as? AMQPError { return error.isFatal }
        if let error = error as? PSQLError, let state = error.serverInfo?[.sqlState] {
            return state.hasPrefix("28") || state == "3D000"  // invalid authorization; no such database
        }
        return error is SettingsError
    }
}
