import Foundation
import Logging
import Synchronization

// Tests: Tests/LivelineAMQPTests/AMQPIntegrationTests.swift, Tests/LivelineAMQPTests/BrokerFailureTests.swift, Tests/LivelineAMQPTests/ConfirmTimeoutTests.swift

/// Where a connection stands.
public enum AMQPConnectionState: Sendable, Equatable {
    case connecting
    case connected
    /// The connection broke; the owner thread is reconnecting with backoff.
    case reconnecting(attempt: Int, lastError: String)
    case closed
}

/// A connection to RabbitMQ, safe to use from any task.
///
/// One connection is one owner thread: rabbitmq-c is not thread-safe and services
/// heartbeats only when called, so every C call happens on a dedicated thread that also
/// reads frames, and the async API hands it work through a mailbox. Nothing blocks the
/// cooperative thread pool.
///
/// **Reconnects.** When the connection breaks (socket error, heartbeat timeout, broker
/// restart), the owner thread reconnects with exponential backoff and jitter, declares every
/// topology given to ``declare(_:)`` again, and resumes every consumer on the same
/// ``AMQPConsumer`` sequence. Publishes that were sent but not yet confirmed when the
/// connection dropped are **sent again** after the reconnect, so a ``publish(_:)`` call
/// returns only once the broker confirmed the message: a publish never silently vanishes,
/// and may reach the broker twice (consumers deduplicate by message id). Deliveries that were
/// not acked are redelivered by the broker with `redelivered` set.
///
/// Use separate connections for publishing and consuming, so a publisher blocked by a
/// broker resource alarm (`connection.blocked`) never stalls acks.
///
/// **Opening.** ``connect(_:logger:)`` makes and opens a connection in one step. A service
/// that owns its connections makes them first (``init(_:logger:)``) and opens them when it
/// runs: whatever is asked of a connection before it is up (a declare, a consume, a publish)
/// waits for it, and fails with the reason if it never comes up.
public final class AMQPConnection: Sendable {
    let driver: ConnectionDriver

    /// A connection not opened yet: nothing touches the network until ``open()``.
    public init(_ configuration: AMQPConfiguration, logger: Logger = Logger(label: "liveline.amqp")) throws {
        driver = try ConnectionDriver(configuration: configuration, logger: logger)
    }

    /// Connects, or throws the first connection's error. Later breaks are repaired automatically.
    public static func connect(
        _ configuration: AMQPConfiguration,
        logger: Logger = Logger(label: "liveline.amqp")
    ) async throws -> AMQPConnection {
        let connection = try AMQPConnection(configuration, logger: logger)
        do {
            try await connection.open()
        } catch {
            await connection.close()
            throw error
        }
        return connection
    }

    /// Opens the connection and returns once it is up, or throws the last broker's error
    /// once ``AMQPConfiguration/firstConnectionPatience`` is spent (at once for refused
    /// credentials or TLS). Later breaks are repaired automatically. A connection opens once.
    /// Cancelling ends the wait; the connection goes on trying until ``close(grace:)``.
    public func open() async throws {
        try await driver.open()
    }

    /// Returns once the connection is up for the first time (at once if it has been), or
    /// throws why it never will be: its first connection failed, or it was closed first.
    /// Cancelling ends the wait, so a service can stop waiting when it is told to stop.
    public func opened() async throws {
        try await driver.opened()
    }

    /// Where the connection stands now.
    public var state: AMQPConnectionState { driver.state }

    /// Whether the broker has blocked publishing on this connection (`connection.blocked`,
    /// sent while a memory or disk alarm is on). Publishes wait until it unblocks.
    public var isBlocked: Bool { driver.isBlocked }

    /// How many times the connection was re-established after a break.
    public var reconnectCount: Int { driver.reconnectCount }

    /// How many replies to a declare, a count or another queue operation came after other
    /// frames, which rabbitmq-c then read off the socket to reach the reply, whatever the
    /// consumers' bound on what they hold (``AMQPConfiguration/maximumHeldBytes``), and kept
    /// until the next reads. Such operations belong on a connection that consumes nothing.
    public var repliesReadAhead: Int { driver.repliesReadAhead }

    /// Declares exchanges, queues and bindings, and remembers them so every reconnect declares
    /// them again. Declaring is idempotent; a declaration that conflicts with what the broker
    /// has (for example other queue arguments) throws a fatal `PRECONDITION_FAILED` error.
    public func declare(_ topology: AMQPTopology) async throws {
        try await withCheckedThrowingContinuation { continuation in
            driver.enqueue(.declare(topology, continuation))
        }
    }

    /// Publishes one message and returns when the broker confirmed it.
    ///
    /// Throws ``AMQPError/Code/unroutable`` for a `mandatory` message no queue took,
    /// ``AMQPError/Code/publishNacked`` when the broker refused responsibility (for example a
    /// full queue with `reject-publish`), or ``AMQPError/Code/connectionClosed`` if the
    /// connection was closed first.
    public func publish(_ message: AMQPMessage) async throws {
        do {
            try await publish(contentsOf: [message])
        } catch let error as AMQPPublishError {
            throw error.failures[0].error
        }
    }

    /// Publishes messages pipelined and returns when the broker confirmed all of them.
    ///
    /// If some fail, throws ``AMQPPublishError`` listing which ones and why, after every
    /// message was settled; the others were confirmed.
    public func publish(contentsOf messages: [AMQPMessage]) async throws {
        try await submit(contentsOf: messages).confirmed()
    }

    /// Queues messages for publishing now and returns the wait for their confirms.
    ///
    /// Messages reach the broker in the order of `submit` calls, whenever and in whichever
    /// order their receipts are awaited, so a caller can have several runs in flight and
    /// still keep them in sequence.
    public func submit(contentsOf messages: [AMQPMessage]) -> PublishReceipt {
        let completion = PublishCompletion(count: messages.count)
        guard !messages.isEmpty else { return PublishReceipt(completion: completion) }
        var pending: [PendingPublish] = []
        pending.reserveCapacity(messages.count)
        for (index, var message) in messages.enumerated() {
            // Returned messages are matched to their publish by message id.
            if message.mandatory, message.properties.messageID == nil {
                message.properties.messageID = UUID().uuidString
            }
            pending.append(PendingPublish(message: message, completion: completion, index: index))
        }
        driver.enqueue(.publish(pending))
        return PublishReceipt(completion: completion)
    }

    /// Starts consuming a queue with manual acks and the given prefetch (`basic.qos`).
    public func consume(queue: String, prefetch: UInt16 = 100) async throws -> AMQPConsumer {
        let record = ConsumerRecord(id: driver.nextConsumerID(), queue: queue, prefetch: prefetch)
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
            driver.enqueue(.consume(record, done))
        }
        return AMQPConsumer(queue: queue, id: record.id, buffer: record.deliveries, connection: self)
    }

    func cancelConsumer(id: UInt64, closeChannel: Bool) async {
        await withCheckedContinuation { continuation in
            driver.enqueue(.cancelConsumer(id, closeChannel: closeChannel, continuation))
        }
    }

    /// The number of ready messages in a queue (a passive declare).
    public func messageCount(queue: String) async throws -> Int {
        try await queueOperation(.count(queue))
    }

    /// The number of consumers subscribed to a queue (a passive declare).
    public func consumerCount(queue: String) async throws -> Int {
        try await queueOperation(.consumers(queue))
    }

    /// Claims the exclusive queue `name` for as long as this connection lives, or until
    /// ``delete(queue:)``: true when this connection holds it now, false when another
    /// connection does. A lease that the broker releases when its holder's connection dies,
    /// and never remembered across a reconnect (the caller claims again).
    public func claim(exclusiveQueue name: String) async throws -> Bool {
        try await queueOperation(.claim(name)) == 1
    }

    /// Removes an exchange-to-exchange binding (and forgets it from remembered topologies,
    /// so a reconnect does not bind it again).
    public func unbind(_ binding: AMQPTopology.ExchangeBinding) async throws {
        _ = try await queueOperation(.unbindExchange(binding))
    }

    /// Removes every ready message from a queue and returns how many there were.
    @discardableResult
    public func purge(queue: String) async throws -> Int {
        try await queueOperation(.purge(queue))
    }

    /// Deletes a queue (and forgets it from remembered topologies).
    public func delete(queue: String) async throws {
        _ = try await queueOperation(.deleteQueue(queue))
    }

    /// Deletes an exchange (and forgets it from remembered topologies).
    public func delete(exchange: String) async throws {
        _ = try await queueOperation(.deleteExchange(exchange))
    }

    private func queueOperation(_ operation: QueueOperation) async throws -> Int {
        try await withCheckedThrowingContinuation { continuation in
            driver.enqueue(.queueOperation(operation, continuation))
        }
    }

    /// Closes the connection gracefully: flushes pending acks, waits (up to `grace`) for
    /// outstanding publish confirms, closes the AMQP connection, and ends every consumer
    /// sequence. Publishes still unconfirmed after the grace period fail with
    /// ``AMQPError/Code/connectionClosed``.
    public func close(grace: Duration = .seconds(5)) async {
        await withCheckedContinuation { continuation in
            driver.requestClose(grace: grace, continuation)
        }
    }
}

/// Some messages of a ``AMQPConnection/publish(contentsOf:)`` call failed.
public struct AMQPPublishError: Error, Sendable, CustomStringConvertible {
    /// The index of each failed message in the batch, with its error, in index order.
    public var failures: [(index: Int, error: AMQPError)]

    public var description: String {
        "\(failures.count) publish(es) failed; first: #\(failures[0].index) \(failures[0].error)"
    }
}

// MARK: - Values shared with the owner thread

/// One message waiting to be sent or confirmed.
struct PendingPublish: @unchecked Sendable {
    var message: AMQPMessage
    let completion: PublishCompletion
    let index: Int
}

/// The wait for the confirms of one ``AMQPConnection/submit(contentsOf:)`` call.
public struct PublishReceipt: Sendable {
    fileprivate let completion: PublishCompletion

    /// Returns once the broker confirmed every message; throws ``AMQPPublishError`` naming
    /// the ones that failed, after all were settled.
    public func confirmed() async throws {
        try await withCheckedThrowingContinuation { continuation in
            completion.whenSettled(continuation)
        }
    }
}

/// Collects the settlement of a run of messages and reports it to whoever waits, before
/// or after the last message is settled.
///
/// Settled on the owner thread, awaited from any task: the state is behind a lock.
final class PublishCompletion: Sendable {
    private struct State {
        var remaining: Int
        var failures: [(index: Int, error: AMQPError)] = []
        var waiter: CheckedContinuation<Void, any Error>?
    }

    private let state: Mutex<State>

    init(count: Int) {
        state = Mutex(State(remaining: count))
    }

    func settle(index: Int, error: AMQPError?) {
        let (waiter, result) = state.withLock { state -> (CheckedContinuation<Void, any Error>?, Result<Void, AMQPPublishError>?) in
            if let error { state.failures.append((index, error)) }
            state.remaining -= 1
            guard state.remaining == 0 else { return (nil, nil) }
            defer { state.waiter = nil }
            return (state.waiter, Self.result(state.failures))
        }
        if let waiter, let result { waiter.resume(with: result.mapError { $0 }) }
    }

    func whenSettled(_ continuation: CheckedContinuation<Void, any Error>) {
        let result = state.withLock { state -> Result<Void, AMQPPublishError>? in
            guard state.remaining == 0 else {
                state.waiter = continuation
                return nil
            }
            return Self.result(state.failures)
        }
        if let result { continuation.resume(with: result.mapError { $0 }) }
    }

    private static func result(_ failures: [(index: Int, error: AMQPError)]) -> Result<Void, AMQPPublishError> {
        failures.isEmpty ? .success(()) : .failure(AMQPPublishError(failures: failures.sorted { $0.index < $1.index }))
    }
}

/// A consumer's registration, kept across reconnects. Confined to the owner thread.
final class ConsumerRecord: @unchecked Sendable {
    let id: UInt64
    let queue: String
    let prefetch: UInt16
    let deliveries = DeliveryBuffer()
    let tag: String
    var channel: UInt16 = 0
    var active = true
    var finishPending = false
    var coalescer = AckCoalescer()
    var lastDeliveredTag: UInt64 = 0
    var held = HeldBytes()

    init(id: UInt64, queue: String, prefetch: UInt16) {
        self.id = id
        self.queue = queue
        self.prefetch = prefetch
        self.tag = "liveline-\(id)-\(UUID().uuidString.prefix(8))"
    }
}

enum QueueOperation: Sendable {
    case count(String)
    case consumers(String)
    case claim(String)
    case unbindExchange(AMQPTopology.ExchangeBinding)
    case purge(String)
    case deleteQueue(String)
    case deleteExchange(String)
}

enum Command: @unchecked Sendable {
    case publish([PendingPublish])
    case settle(Settlement)
    case declare(AMQPTopology, CheckedContinuation<Void, any Error>)
    case consume(ConsumerRecord, CheckedContinuation<Void, any Error>)
    case cancelConsumer(UInt64, closeChannel: Bool, CheckedContinuation<Void, Never>)
    case queueOperation(QueueOperation, CheckedContinuation<Int, any Error>)
}
