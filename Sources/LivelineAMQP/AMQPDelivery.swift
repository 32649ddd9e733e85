import Foundation

// Tests: Tests/LivelineAMQPTests/AMQPIntegrationTests.swift, Tests/LivelineAMQPTests/ConsumerBatchTests.swift

/// A message delivered to a consumer. Settle it exactly once with ``ack(multiple:)``,
/// ``nack(requeue:multiple:)`` or ``reject(requeue:)`` after the work it stands for is done.
///
/// Settling is cheap and never blocks: it queues a frame for the connection's owner thread,
/// which coalesces runs of acks into one `multiple` ack. A delivery received before a
/// reconnect cannot be settled any more; the broker has already requeued it and delivers it
/// again with ``redelivered`` set, so settling it is a no-op.
public struct AMQPDelivery: Sendable {
    public let body: Data
    public let properties: AMQPProperties
    public let exchange: String
    public let routingKey: String
    /// True when the broker delivered this message before (to this or another consumer).
    public let redelivered: Bool
    public let deliveryTag: UInt64
    /// The queue it was consumed from.
    public let queue: String

    let channel: UInt16
    let generation: UInt64
    let settler: any DeliverySettling

    /// Acknowledges the message; with `multiple`, every earlier unsettled delivery on this
    /// consumer too.
    public func ack(multiple: Bool = false) {
        settler.settle(.init(channel: channel, generation: generation, tag: deliveryTag, kind: .ack(multiple: multiple)))
    }

    /// Negatively acknowledges: `requeue` puts it back on the queue (counting towards the
    /// queue's delivery limit); otherwise the queue dead-letters it.
    public func nack(requeue: Bool = true, multiple: Bool = false) {
        settler.settle(
            .init(channel: channel, generation: generation, tag: deliveryTag, kind: .nack(requeue: requeue, multiple: multiple)))
    }

    /// Rejects the message; without `requeue` the queue dead-letters it with reason `rejected`.
    public func reject(requeue: Bool = false) {
        settler.settle(.init(channel: channel, generation: generation, tag: deliveryTag, kind: .reject(requeue: requeue)))
    }

    /// The broker's dead-letter history of this message, newest first.
    public var deaths: [AMQPDeath] { AMQPDeath.history(from: properties.headers) }
}

/// A settle request travelling from any thread to the owner thread.
struct Settlement: Sendable {
    enum Kind: Sendable {
        case ack(multiple: Bool)
        case nack(requeue: Bool, multiple: Bool)
        case reject(requeue: Bool)
    }
    var channel: UInt16
    var generation: UInt64
    var tag: UInt64
    var kind: Kind
}

protocol DeliverySettling: Sendable {
    func settle(_ settlement: Settlement)
}

/// A consumer: an async sequence of deliveries from one queue.
///
/// The sequence ends when the consumer is cancelled or the connection is closed, and throws
/// ``AMQPError/Code/consumerCancelled`` when the broker cancels it (for example, the queue was
/// deleted). It survives reconnects: after one, the broker redelivers what was unacked.
public struct AMQPConsumer: AsyncSequence, Sendable {
    public typealias Element = AMQPDelivery
    public let queue: String
    let id: UInt64
    let buffer: DeliveryBuffer
    let connection: AMQPConnection

    /// Iterate a consumer from one task at a time.
    public func makeAsyncIterator() -> Iterator {
        Iterator(buffer: buffer)
    }

    public struct Iterator: AsyncIteratorProtocol {
        let buffer: DeliveryBuffer
        private var batch: [AMQPDelivery] = []
        private var index = 0

        init(buffer: DeliveryBuffer) {
            self.buffer = buffer
        }

        public mutating func next() async throws -> AMQPDelivery? {
            if index == batch.count {
                guard let taken = try await buffer.take() else { return nil }
                batch = taken
                index = 0
            }
            defer { index += 1 }
            return batch[index]
        }
    }

    /// Stops new deliveries (`basic.cancel`) but keeps the channel open, so deliveries already
    /// received can still be acked. This is the first step of a graceful drain.
    public func cancel() async {
        await connection.cancelConsumer(id: id, closeChannel: false)
    }

    /// Closes the consumer's channel: every unacked delivery goes back to the queue.
    public func close() async {
        await connection.cancelConsumer(id: id, closeChannel: true)
    }
}
