import Foundation
import Synchronization
import Testing

@testable import LivelineAMQP

/// The batches ``AMQPConsumer/nextBatch(maxSize:linger:quiet:)`` hands out, from the buffer the
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

    /// A drain in small batches from a deep buffer that keeps filling behind them, as a
    /// translator with `max-batch` 10 and 1,500 prefetched: every delivery comes out once, in
    /// order, though the buffer's storage wraps around many times.
    @Test func smallBatchesFromADeepBufferKeepTheOrder() async throws {
        let buffer = DeliveryBuffer()
        var next: UInt64 = 1
        for _ in 0..<1_500 { buffer.yield(delivery(next)); next += 1 }
        var taken: [UInt64] = []
        while let batch = tags(try await buffer.take(atMost: 10, linger: .zero)) {
            #expect(batch.count == 10)
            taken += batch
            // Refilled as the broker would after the ack, until 5,000 were sent.
            for _ in batch where next <= 5_000 { buffer.yield(delivery(next)); next += 1 }
            if taken.count == 5_000 { buffer.finish() }
        }
        #expect(taken == Array(1...5_000))
    }

    /// Ticks a buffer every millisecond from a thread of its own, as the owner thread does on
    /// every turn of its loop: a linger ends on a tick or a delivery, never on its own.
    final class Ticker: Sendable {
        private let stopped = Mutex(false)
        private let done = DispatchSemaphore(value: 0)

        init(_ buffer: DeliveryBuffer) {
            let thread = Thread { [self] in
                while !stopped.withLock({ $0 }) {
                    Thread.sleep(forTimeInterval: 0.001)
                    buffer.tick(now: .now)
                }
                done.signal()
            }
            thread.start()
        }

        func stop() {
            stopped.withLock { $0 = true }
            done.wait()
        }
    }

    /// What a lingering take asks of the owner thread, once it waits; a take that never
    /// lingers fails the test within 10 s instead of hanging it.
    func lingering(_ buffer: DeliveryBuffer) async throws -> DeliveryBuffer.LingerWait {
        let giveUp = ContinuousClock.now + .seconds(10)
        while buffer.lingerWait == nil, ContinuousClock.now < giveUp {
            try await Task.sleep(for: .milliseconds(5))
        }
        return try #require(buffer.lingerWait, "the take never lingered")
    }

    @Test func aShortBatchLingersForStragglers() async throws {
        let buffer = DeliveryBuffer()
        buffer.yield(delivery(1))
        let batch = Task { try await buffer.take(atMost: 10, linger: .seconds(3600)) }
        _ = try await lingering(buffer)
        buffer.yield(delivery(2))
        buffer.tick(now: try #require(buffer.lingerWait?.deadline))
        #expect(tags(try await batch.value) == [1, 2])
    }

    @Test func aBurstThatArrivedWholeWaitsOneQuietStepNotTheLinger() async throws {
        let buffer = DeliveryBuffer()
        let ticker = Ticker(buffer)
        defer { ticker.stop() }
        for tag: UInt64 in 1...3 { buffer.yield(delivery(tag)) }
        let started = ContinuousClock.now
        // An hour's linger would hang the test if it were waited.
        #expect(tags(try await buffer.take(atMost: 10, linger: .seconds(3600), quiet: .milliseconds(20))) == [1, 2, 3])
        #expect(ContinuousClock.now - started < .seconds(60))
    }

    /// Yields a delivery every `interval` from a thread of its own (the owner thread's part),
    /// so a busy task pool cannot hold the trickle back; `count` nil: until stopped.
    final class Trickle: Sendable {
        private let stopped = Mutex(false)
        private let done = DispatchSemaphore(value: 0)

        init(into buffer: DeliveryBuffer, from first: UInt64, count: Int?, every interval: TimeInterval) {
            let thread = Thread { [self] in
                var tag = first
                while !stopped.withLock({ $0 }), count.map({ tag < first + UInt64($0) }) ?? true {
                    Thread.sleep(forTimeInterval: interval)
                    buffer.yield(ConsumerBatchTests().delivery(tag))
                    tag += 1
                }
                done.signal()
            }
            thread.start()
        }

        func stop() {
            stopped.withLock { $0 = true }
            done.wait()
        }
    }

    @Test func aTrickleKeepsTheBatchOpenWhileItLastsUpToTheLinger() async throws {
        let buffer = DeliveryBuffer()
        let ticker = Ticker(buffer)
        defer { ticker.stop() }
        buffer.yield(delivery(1))
        // Five more, 20 ms apart: each well within the quiet step, so one batch holds them all.
        let trickle = Trickle(into: buffer, from: 2, count: 5, every: 0.02)
        let began = ContinuousClock.now
        let batch = try await buffer.take(atMost: 100, linger: .seconds(30), quiet: .seconds(1))
        trickle.stop()
        #expect(tags(batch) == [1, 2, 3, 4, 5, 6])
        #expect(ContinuousClock.now - began < .seconds(20), "a quiet step after the last ended it, not the linger")

        // A trickle that never stops is cut at the linger.
        let endless = Trickle(into: buffer, from: 10, count: nil, every: 0.005)
        defer { endless.stop() }
        let started = ContinuousClock.now
        let capped = try await buffer.take(atMost: 100_000, linger: .milliseconds(300), quiet: .milliseconds(100))
        #expect(ContinuousClock.now - started >= .milliseconds(300), "it lingered past its first quiet step")
        #expect(ContinuousClock.now - started < .seconds(60))
        #expect(try #require(capped).count > 1)
    }

    @Test func theOwnersTickEndsALingerAtItsDeadlineNotBefore() async throws {
        let buffer = DeliveryBuffer()
        buffer.yield(delivery(1))
        let batch = Task { try await buffer.take(atMost: 10, linger: .seconds(3600), quiet: .seconds(1800)) }
        // A quiet step after the last delivery.
        let due = try await lingering(buffer).deadline
        #expect(due > .now + .seconds(1700) && due <= .now + .seconds(1800))
        buffer.tick(now: due - .seconds(1))
        #expect(buffer.lingerWait?.deadline == due, "a tick before the deadline leaves it waiting")
        buffer.tick(now: due)
        #expect(tags(try await batch.value) == [1])
        #expect(buffer.lingerWait == nil)
    }

    /// A linger that ran to its end with deliveries arriving and its batch short marks a
    /// trickle: the next linger lets the owner thread leave the socket unread until its end.
    /// One that a quiet step ended, or a full batch, does not.
    @Test func aLingerThatRanItsCourseLetsTheNextOneLeaveTheSocketUnread() async throws {
        let buffer = DeliveryBuffer()
        // One step as long as the linger: its deadline is the linger's end.
        func take() -> Task<[AMQPDelivery]?, any Error> {
            Task { try await buffer.take(atMost: 3, linger: .seconds(3600), quiet: .seconds(3600)) }
        }

        buffer.yield(delivery(1))
        var batch = take()
        var wait = try await lingering(buffer)
        #expect(!wait.readsMayWait, "no linger ran before: the socket is watched")
        buffer.yield(delivery(2))
        buffer.tick(now: wait.deadline)
        #expect(tags(try await batch.value) == [1, 2])

        buffer.yield(delivery(3))
        batch = take()
        wait = try await lingering(buffer)
        #expect(wait.readsMayWait, "the last linger ran its course on a trickle")
        #expect(wait.deadline > .now + .seconds(3500), "the owner sleeps to the linger's end")
        // The trickle stopped: nothing came during this linger.
        buffer.tick(now: wait.deadline)
        #expect(tags(try await batch.value) == [3])

        buffer.yield(delivery(4))
        batch = take()
        wait = try await lingering(buffer)
        #expect(!wait.readsMayWait, "nothing arrived during the last linger")
        buffer.yield(delivery(5))
        buffer.tick(now: wait.deadline)
        #expect(tags(try await batch.value) == [4, 5])

        buffer.yield(delivery(6))
        batch = take()
        wait = try await lingering(buffer)
        #expect(wait.readsMayWait)
        buffer.yield(delivery(7))
        buffer.yield(delivery(8))
        #expect(tags(try await batch.value) == [6, 7, 8], "a full batch ends the linger at once")
        buffer.yield(delivery(9))
        batch = take()
        wait = try await lingering(buffer)
        #expect(!wait.readsMayWait, "a batch that filled is no trickle")
        buffer.tick(now: wait.deadline)
        #expect(tags(try await batch.value) == [9])
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
