import LivelineAMQP
import LivelineRuntime
import Logging
import Synchronization
import Testing

/// Workers wait for a broker or store that is not up yet, and give up at once on what
/// waiting cannot fix.
@Suite struct StartupRetryTests {
    struct Unreachable: Error {}

    /// Short waits, and a limit no loaded machine reaches in four attempts (under the whole
    /// suite, three waits of at most 40 ms once took past a 5 s limit).
    static let quick = StartupRetry(limit: .seconds(60), initialDelay: .milliseconds(10), maximumDelay: .milliseconds(40))

    @Test func retriesUntilTheDependencyAnswers() async throws {
        let attempts = Mutex(0)
        let value = try await Self.quick.run("broker", logger: Logger(label: "test")) {
            let attempt = attempts.withLock { $0 += 1; return $0 }
            if attempt < 4 { throw Unreachable() }
            return "connected"
        }
        #expect(value == "connected")
        #expect(attempts.withLock { $0 } == 4)
    }

    @Test func refusedCredentialsFailAtOnce() async throws {
        let attempts = Mutex(0)
        await #expect(throws: AMQPError.self) {
            try await Self.quick.run("broker", logger: Logger(label: "test")) {
                attempts.withLock { $0 += 1 }
                throw AMQPError(.authenticationFailed, "ACCESS_REFUSED")
            }
        }
        #expect(attempts.withLock { $0 } == 1)
    }

    @Test func givesUpAtTheLimitWithTheLastError() async throws {
        // Generous against a loaded machine, where a 20 ms sleep has taken 600 ms under the
        // whole suite: waits of 20, 40, 40... ms in a 3 s limit.
        let retry = StartupRetry(limit: .seconds(3), initialDelay: .milliseconds(20), maximumDelay: .milliseconds(40))
        let attempts = Mutex(0)
        let started = ContinuousClock.now
        await #expect(throws: Unreachable.self) {
            try await retry.run("store", logger: Logger(label: "test")) {
                attempts.withLock { $0 += 1 }
                throw Unreachable()
            }
        }
        // It stops soon after the limit, after trying again, at most 76 times. Two is the floor:
        // with another build beside the suite, a 20 ms wait once took 1.5 s, and under the whole
        // suite the run has ended 3 s past the 3 s limit; one that never gave up would not end.
        #expect(ContinuousClock.now - started < .seconds(15))
        #expect((2...76).contains(attempts.withLock { $0 }), "\(attempts.withLock { $0 }) attempts")
    }

    @Test func aBrokerThatIsNotThereIsRetriedAndEachAttemptLogged() async throws {
        // A port nothing listens on: every attempt is refused, and each is logged. The test
        // counts attempts, not time: a refused connect has taken over a second on a loaded
        // machine, so three real attempts are made and the fourth ends the run.
        struct Enough: Error {}
        let configuration = try AMQPConfiguration(url: "amqp://guest:guest@127.0.0.1:1/%2f")
        let lines = LogLines()
        let logger = Logger(label: "test") { _ in lines }
        let retry = StartupRetry(limit: .seconds(120), initialDelay: .milliseconds(20), maximumDelay: .milliseconds(40))
        let attempts = Mutex(0)
        await #expect(throws: Enough.self) {
            try await retry.run("broker (test)", logger: logger, isFatal: { $0 is Enough || StartupRetry.isFatal($0) }) {
                if attempts.withLock({ $0 += 1; return $0 }) > 3 { throw Enough() }
                return try await AMQPConnection.connect(configuration)
            }
        }
        let retries = lines.messages.filter { $0.contains("broker (test) unreachable; retrying") }
        #expect(retries.count == 3, "\(lines.messages)")
        #expect(lines.messages.last?.contains("giving up") == true)
    }
}

/// Collects what a logger writes.
final class LogLines: LogHandler, Sendable {
    private let lines = Mutex<[String]>([])
    var messages: [String] { lines.withLock { $0 } }

    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    var logLevel: Logger.Level {
        get { .trace }
        set {}
    }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }

    func log(event: LogEvent) {
        lines.withLock { $0.append("\(event.level) \(event.message)") }
    }
}
