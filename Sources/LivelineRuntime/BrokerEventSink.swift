import Foundation
import LivelineAMQP
import LivelineAPI
import LivelineMessaging
import LivelineProducer
import Logging
import Synchronization

// Tests: Tests/LivelineRuntimeTests/EventIntakeTests.swift

/// The api's way to the broker for events over HTTPS: one publishing connection, opened at
/// the first event and opened again after it closed, so the api serves its other routes
/// whether the broker is up or not. A publish the broker does not confirm within the
/// timeout fails, and the producer is told to retry (`503`): a message that was only slow
/// may still reach the queue, and the translator drops the retry's copy as a duplicate.
public final class BrokerEventSink: EventSink {
    private let amqp: AMQPConfiguration
    private let topology: LivelineTopology
    private let timeout: Duration
    private let logger: Logger
    /// The connection, or the attempt to open it that every request waits on.
    private let connection = Mutex<Task<AMQPConnection, any Error>?>(nil)

    public init(amqp: AMQPConfiguration, topology: LivelineTopology, timeout: Duration, logger: Logger) {
        self.amqp = amqp
        self.topology = topology
        self.timeout = timeout
        self.logger = logger
    }

    public func publish(_ events: [AcceptedEvent]) async throws {
        let messages = events.map { event in
            EventPublisher.message(
                exchange: topology.eventsExchange, routingKey: event.type, body: event.body, id: event.id,
                type: event.type, time: event.time, activityID: event.activityID)
        }
        try await Self.within(timeout) { [self] in
            let connection = try await connected()
            try await connection.publish(contentsOf: messages)
        }
    }

    /// Closes the connection, if one was opened.
    public func close() async {
        guard let opening = connection.withLock({ $0.take() }), let open = try? await opening.value else { return }
        await open.close()
    }

    private func connected() async throws -> AMQPConnection {
        let opening = connection.withLock { current in
            if let current { return current }
            let opening = Task { [amqp, topology, logger] in
                try await connectPublisher(amqp, topology: topology, as: "api-events", logger: logger)
            }
            current = opening
            return opening
        }
        do {
            let open = try await opening.value
            // A connection that closed for good (its reconnects are its own affair) is replaced.
            if open.state == .closed {
                forget(opening)
                return try await connected()
            }
            return open
        } catch {
            forget(opening)
            throw error
        }
    }

    /// Drops a failed or closed connection, unless another request replaced it already.
    private func forget(_ opening: Task<AMQPConnection, any Error>) {
        connection.withLock { current in
            if current == opening { current = nil }
        }
    }

    /// `work`'s result, or ``EventSinkTimeout`` after `timeout`: a publish waiting on a
    /// broker that is down is left to finish (or fail) on its own.
    private static func within(_ timeout: Duration, _ work: @escaping @Sendable () async throws -> Void) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let outcome = FirstOutcome(continuation)
            let timer = Task {
                try await Task.sleep(for: timeout)
                outcome.settle(.failure(EventSinkTimeout(timeout: timeout)))
            }
            Task {
                do {
                    try await work()
                    outcome.settle(.success(()))
                } catch {
                    outcome.settle(.failure(error))
                }
                timer.cancel()
            }
        }
    }
}

/// Resumes a continuation with the first result it is given; later ones are ignored.
private final class FirstOutcome: Sendable {
    private let continuation: Mutex<CheckedContinuation<Void, any Error>?>

    init(_ continuation: CheckedContinuation<Void, any Error>) {
        self.continuation = Mutex(continuation)
    }

    func settle(_ result: Result<Void, any Error>) {
        continuation.withLock { $0.take() }?.resume(with: result)
    }
}

/// The broker did not confirm in time.
struct EventSinkTimeout: Error, CustomStringConvertible {
    let timeout: Duration
    var description: String { "no confirm from the broker within \(timeout)" }
}
