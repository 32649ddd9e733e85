import Foundation
import LivelineAMQP
import LivelineChildProcess
import Logging
import Synchronization
import Testing

/// The RabbitMQ that `scripts/test` started on loopback, shared by every broker test target.
public enum Broker {
    public static let environment = ProcessInfo.processInfo.environment

    public static var url: String {
        environment["LIVELINE_TEST_AMQP_URL"] ?? "amqp://guest:guest@127.0.0.1:5672/%2f"
    }

    public static func configuration(
        heartbeat: Duration = .seconds(10), name: String = #function
    ) throws -> AMQPConfiguration {
        var configuration = try AMQPConfiguration(url: url)
        configuration.heartbeat = heartbeat
        // The connect timeout is left at its default, since it also bounds each request: a
        // quorum queue's declare or delete goes through its Raft log, and with every suite
        // running at once on a CI machine one took over 3 s, which lost a test its connection.
        configuration.reconnect = .init(initial: .milliseconds(100), maximum: .seconds(1))
        configuration.connectionName = "test-\(name)"
        return configuration
    }

    public static func connect(heartbeat: Duration = .seconds(10), name: String = #function) async throws -> AMQPConnection {
        do {
            return try await AMQPConnection.connect(try configuration(heartbeat: heartbeat, name: name), logger: logger)
        } catch {
            Issue.record("No RabbitMQ at \(url). Run the tests with scripts/test, which starts one. (\(error))")
            throw error
        }
    }

    /// Runs `scripts/rabbitmq <action>` (start, stop, restart, pause, resume, alarm on|off).
    ///
    /// The script is spawned with `posix_spawn` and waited for on a thread of its own:
    /// Foundation's `Process` blocked a cooperative thread in `waitUntilExit`, and two CI
    /// runs that used it hung with its run-loop thread still alive.
    public static func control(_ action: String...) async throws {
        let script =
            environment["LIVELINE_RABBITMQ_CTL"]
            ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
                "../../scripts/rabbitmq"
            ).path
        let status = try await ChildProcess.run(script, arguments: action)
        try #require(status == 0, "scripts/rabbitmq \(action.joined(separator: " ")) exited with \(status)")
    }

    public static var logger: Logger {
        var logger = Logger(label: "test.amqp")
        logger.logLevel = environment["LIVELINE_TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        return logger
    }

    public static func unique(_ prefix: String) -> String {
        "test.\(prefix).\(UUID().uuidString.prefix(8).lowercased())"
    }
}

/// Tests that stop or freeze the broker run alone; every other broker test shares it.
public actor BrokerGate {
    public static let shared = BrokerGate()
    /// Whether the current task holds the gate, and alone (`true`) or shared (`false`).
    @TaskLocal static var held: Bool?
    private var readers = 0
    private var writer = false
    private var waiters: [(exclusive: Bool, continuation: CheckedContinuation<Void, Never>)] = []

    private func canEnter(exclusive: Bool) -> Bool {
        exclusive ? !writer && readers == 0 : !writer
    }

    public func acquire(exclusive: Bool) async {
        if waiters.isEmpty, canEnter(exclusive: exclusive) {
            enter(exclusive: exclusive)
            return
        }
        await withCheckedContinuation { waiters.append((exclusive, $0)) }
    }

    public func release(exclusive: Bool) {
        if exclusive { writer = false } else { readers -= 1 }
        while let next = waiters.first, canEnter(exclusive: next.exclusive) {
            waiters.removeFirst()
            enter(exclusive: next.exclusive)
            next.continuation.resume()
        }
    }

    private func enter(exclusive: Bool) {
        if exclusive { writer = true } else { readers += 1 }
    }
}

/// Runs `body` holding the broker gate: shared, or alone when `exclusive`.
///
/// Reentrant: a task that already holds the gate (a test inside `withBroker` calling a
/// harness that also uses it) runs `body` at once. Acquiring again would queue behind a
/// waiting exclusive test, which waits for this task to leave: the deadlock that hung CI
/// runs on 2026-11-23 after the other tests had finished.
public func withBroker<T>(exclusive: Bool = false, _ body: () async throws -> T) async throws -> T {
    if let held = BrokerGate.held {
        precondition(held || !exclusive, "a test holding the broker gate shared cannot take it alone")
        return try await body()
    }
    await BrokerGate.shared.acquire(exclusive: exclusive)
    do {
        let result = try await BrokerGate.$held.withValue(exclusive) { try await body() }
        await BrokerGate.shared.release(exclusive: exclusive)
        return result
    } catch {
        await BrokerGate.shared.release(exclusive: exclusive)
        throw error
    }
}

/// Reads `count` deliveries, failing the test if they don't arrive within `timeout`.
public func receive(
    _ count: Int, from consumer: AMQPConsumer, timeout: Duration = .seconds(20)
) async throws -> [AMQPDelivery] {
    try await withThrowingTaskGroup(of: [AMQPDelivery]?.self) { group in
        group.addTask {
            var received: [AMQPDelivery] = []
            for try await delivery in consumer {
                received.append(delivery)
                if received.count == count { break }
            }
            return received
        }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        let first = try await group.next()!
        group.cancelAll()
        guard let received = first else {
            Issue.record("timed out waiting for \(count) deliveries")
            throw CancellationError()
        }
        return received
    }
}

/// Polls until `condition` holds, failing after `timeout`, or at once with the error a task
/// in the background ended with (`failure`): a service that failed to start then shows its
/// error, not the wait's timeout.
public func eventually(
    timeout: Duration = .seconds(20), _ what: String, unless failure: BackgroundFailure? = nil,
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if let error = failure?.error { throw error }
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(50))
    }
    Issue.record("timed out waiting for: \(what)")
    throw CancellationError()
}

/// The error a task in the background (a service group a test runs) ended with, for
/// `eventually(…, unless:)`, which cannot wait on that task without blocking on it.
public final class BackgroundFailure: Sendable {
    private let first = Mutex<(any Error)?>(nil)

    public init() {}

    public var error: (any Error)? { first.withLock { $0 } }

    /// Runs `body`, keeping the error it throws before throwing it on.
    public func recording(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch {
            first.withLock { $0 = $0 ?? error }
            throw error
        }
    }
}

public func message(_ text: String, to queue: String, id: String? = nil) -> AMQPMessage {
    AMQPMessage(
        exchange: "", routingKey: queue, body: Data(text.utf8),
        properties: AMQPProperties(contentType: "text/plain", messageID: id))
}

public let quorum: AMQPTable = ["x-queue-type": "quorum"]
