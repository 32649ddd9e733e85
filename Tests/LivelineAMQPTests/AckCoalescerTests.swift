import LivelineTestSupport
import Testing

@testable import LivelineAMQP

@Suite struct AckCoalescerTests {
    @Test func inOrderAcksCollapseIntoOneMultipleAck() {
        var coalescer = AckCoalescer()
        for tag in 1...500 as ClosedRange<UInt64> { coalescer.ack(tag) }
        #expect(coalescer.flush() == [.ack(tag: 500, multiple: true)])
        #expect(coalescer.settledBelow == 501)
    }

    @Test func aGapIsNeverCoveredByAMultipleAck() {
        var coalescer = AckCoalescer()
        // Tag 3 is still being worked on.
        for tag: UInt64 in [1, 2, 4, 5] { coalescer.ack(tag) }
        #expect(coalescer.flush() == [.ack(tag: 2, multiple: true), .ack(tag: 4, multiple: false), .ack(tag: 5, multiple: false)])
        coalescer.ack(3)
        #expect(coalescer.flush() == [.ack(tag: 3, multiple: false)])
        #expect(coalescer.settledBelow == 6)
    }

    @Test func acksAboveAGapWaitForItThenGoInOneMultipleAck() {
        var coalescer = AckCoalescer()
        let start = ContinuousClock.now
        for tag: UInt64 in [1, 2, 4, 5] { coalescer.ack(tag) }
        #expect(coalescer.flush(now: start, force: false) == [.ack(tag: 2, multiple: true)])
        #expect(coalescer.hasPending, "4 and 5 wait for 3")
        coalescer.ack(3)
        #expect(coalescer.flush(now: start + .milliseconds(5), force: false) == [.ack(tag: 5, multiple: true)])
        #expect(!coalescer.hasPending)
        #expect(coalescer.settledBelow == 6)
    }

    @Test func acksAboveAGapGoOneByOneOnceTheHoldIsOver() {
        var coalescer = AckCoalescer()
        let start = ContinuousClock.now
        for tag: UInt64 in [2, 3] { coalescer.ack(tag) }
        #expect(coalescer.flush(now: start, force: false) == [])
        coalescer.ack(5)
        #expect(coalescer.flush(now: start + .milliseconds(10), force: false) == [])
        #expect(coalescer.flush(now: start + AckCoalescer.hold, force: false)
            == [.ack(tag: 2, multiple: false), .ack(tag: 3, multiple: false), .ack(tag: 5, multiple: false)])
        #expect(!coalescer.hasPending)
        // Tag 1 finally settles: nothing above it is acked twice.
        coalescer.ack(1)
        #expect(coalescer.flush(force: false) == [.ack(tag: 1, multiple: false)])
        #expect(coalescer.settledBelow == 4)
    }

    @Test func aForcedFlushSendsHeldAcksAtOnce() {
        var coalescer = AckCoalescer()
        for tag: UInt64 in [2, 3] { coalescer.ack(tag) }
        #expect(coalescer.flush(force: false) == [])
        #expect(coalescer.flush() == [.ack(tag: 2, multiple: false), .ack(tag: 3, multiple: false)])
    }

    @Test func rejectedTagsInsideARunAreSkippedNotAcked() {
        var coalescer = AckCoalescer()
        coalescer.settledDirectly(2, multiple: false)  // rejected
        for tag: UInt64 in [1, 3, 4] { coalescer.ack(tag) }
        #expect(coalescer.flush() == [.ack(tag: 4, multiple: true)])
    }

    @Test func aSingleAckIsNotMultiple() {
        var coalescer = AckCoalescer()
        coalescer.ack(1)
        #expect(coalescer.flush() == [.ack(tag: 1, multiple: false)])
        #expect(!coalescer.hasPending)
    }

    @Test func explicitMultipleAckMovesTheWatermark() {
        var coalescer = AckCoalescer()
        coalescer.settledDirectly(10, multiple: true)
        coalescer.ack(5)  // already covered
        coalescer.ack(11)
        #expect(coalescer.flush() == [.ack(tag: 11, multiple: false)])
    }
}

@Suite struct ConfirmTrackerTests {
    @Test func multipleAckSettlesEverythingUpToTheTag() {
        var tracker = ConfirmTracker<String>()
        for name in ["a", "b", "c", "d"] { _ = tracker.register(name) }
        #expect(tracker.settle(tag: 3, multiple: true).map(\.item) == ["a", "b", "c"])
        #expect(tracker.count == 1)
        #expect(tracker.settle(tag: 4, multiple: false).map(\.tag) == [4])
        #expect(tracker.count == 0)
    }

    @Test func singleAcksOutOfOrderAndUnknownTags() {
        var tracker = ConfirmTracker<Int>()
        for value in 0..<3 { _ = tracker.register(value) }
        #expect(tracker.settle(tag: 2, multiple: false).map(\.item) == [1])
        #expect(tracker.settle(tag: 2, multiple: false).isEmpty)
        #expect(tracker.settle(tag: 99, multiple: true).isEmpty)
        #expect(tracker.settle(tag: 3, multiple: true).map(\.item) == [0, 2])
    }

    @Test func resetReturnsUnconfirmedInOrderAndRestartsTags() {
        var tracker = ConfirmTracker<Int>()
        for value in 0..<5 { _ = tracker.register(value) }
        _ = tracker.settle(tag: 2, multiple: false)
        #expect(tracker.reset() == [0, 2, 3, 4])
        #expect(tracker.register(9) == 1)
    }

    @Test func findsTagsByContent() {
        var tracker = ConfirmTracker<String>()
        for name in ["x", "y", "x"] { _ = tracker.register(name) }
        #expect(tracker.firstTag { $0 == "x" } == 1)
        #expect(tracker.firstTag(after: 1) { $0 == "x" } == 3)
    }

    @Test func backoffGrowsWithJitterAndIsCapped() {
        let backoff = AMQPConfiguration.Backoff(initial: .milliseconds(100), maximum: .seconds(2))
        #expect(backoff.delay(attempt: 0, random: 1) == .milliseconds(100))
        #expect(backoff.delay(attempt: 0, random: 0) == .milliseconds(50))
        #expect(backoff.delay(attempt: 3, random: 1) == .milliseconds(800))
        #expect(backoff.delay(attempt: 20, random: 1) == .seconds(2))
    }
}
