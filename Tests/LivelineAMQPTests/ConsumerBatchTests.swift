import Foundation
import Testing

@testable import LivelineAMQP

/// The batches ``AMQPConsumer/nextBatch(maxSize:linger:)`` hands out, from the buffer the
/// owner thread fills; no broker.
@Suite struct ConsumerBatchTests {
    struct NoSettling: DeliverySettling {
        func settle(_ settlement: Settlement) {}
    }

    func delivery(_ tag: UInt64) -> AMQPDelivery {
        AMQPDelivery(
            body: Data(), properties: AMQPProperties(persistent: true), exchange: "", routingKey: "q",
            redelivered: false, deliveryTag: tag, queue: "q", channel: 3, generation: 1, settler: NoSettling())
    }

    func tags(_ batch: [AMQPDelivery]?) -> [UInt64]? { batch?.map(\.deliveryTag) }

    @Test func aBatchTakesWhatIsBufferedUpToTheMaximum() async throws {
        let buffer = DeliveryBuffer()
        for tag: UInt64 in 1...5 { buffer.yield(delivery(tag)) }
        #expect(tags(try await buffer.take(atMost: 3, linger: .zero)) == [1, 2, 3])
        #expect(tags(try await buffer.take(atMost: 3, linger: .zero)) == [4, 5])
    }

    @Test func aShortBatchLingersForStragglers() async throws {
        let buffer = DeliveryBuffer()
        buffer.yield(delivery(1))
        async let batch = buffer.take(atMost: 10, linger: .milliseconds(500))
        try await Task.sleep(for: .milliseconds(20))
        buffer.yield(delivery(2))
        #expect(tags(try await batch) == [1, 2])
    }

    @Test func aFullBatchOrAFinishedConsumerDoesNotLinger() async throws {
        let buffer = DeliveryBuffer()
        for tag: UInt64 in 1...3 { buffer.yield(delivery(tag)) }
        // An hour's linger would hang the test if it were waited.
        #expect(tags(try await buffer.take(atMost: 3, linger: .seconds(3600))) == [1, 2, 3])
        buffer.yield(delivery(4))
        buffer.finish()
        #expect(tags(try await buffer.take(atMost: 3, linger: .seconds(3600))) == [4])
    }

    @Test func finishingHandsOutTheRestThenEnds() async throws {
        let buffer = DeliveryBuffer()
        buffer.yield(delivery(1))
        buffer.yield(delivery(2))
        buffer.finish()
        buffer.yield(delivery(3))
        #expect(tags(try await buffer.take(atMost: 1, linger: .zero)) == [1])
        #expect(tags(try await buffer.take(atMost: 1, linger: .zero)) == [2])
        #expect(try await buffer.take(atMost: 1, linger: .zero) == nil, "nothing after finish")
    }

    @Test func theConsumersErrorComesAfterItsLastDelivery() async throws {
        let buffer = DeliveryBuffer()
        buffer.yield(delivery(1))
        buffer.finish(throwing: AMQPError(.consumerCancelled, "the broker cancelled the consumer"))
        #expect(tags(try await buffer.take(atMost: 10, linger: .milliseconds(10))) == [1])
        await #expect(throws: AMQPError.self) { try await buffer.take(atMost: 10, linger: .zero) }
    }

    @Test func aWaitingTakeWakesForTheFirstDelivery() async throws {
        let buffer = DeliveryBuffer()
        async let batch = buffer.take(atMost: 10, linger: .zero)
        try await Task.sleep(for: .milliseconds(20))
        buffer.yield(delivery(7))
        #expect(tags(try await batch) == [7])
    }

    @Test func cancellingAWaitingTakeEndsItWithNil() async throws {
        let buffer = DeliveryBuffer()
        let waiting = Task { try await buffer.take(atMost: 10, linger: .zero) }
        try await Task.sleep(for: .milliseconds(20))
        waiting.cancel()
        #expect(try await waiting.value == nil)
    }
}
