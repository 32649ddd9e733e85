@testable import LivelineAMQP
import Testing

/// How long the connection's owner thread sleeps, and whether it watches the socket meanwhile.
@Suite struct PollPolicyTests {
    let now = ContinuousClock.now

    func decide(
        heartbeat: Duration = .seconds(15), closing: Bool = false, unsettled: Bool = false, publishes: Bool = false,
        consumers: [DeliveryBuffer.LingerWait?] = [], held: Bool = false
    ) -> PollPolicy {
        PollPolicy.decide(
            heartbeat: heartbeat, closing: closing, unsettledDeliveries: unsettled, publishesAwaitBroker: publishes,
            consumers: consumers, readsHeld: held, now: now)
    }

    /// Consumers holding more than they may leave the socket unwatched, and the thread looks
    /// again every 2 ms for the settlements that free them; a closing thread reads on.
    @Test func heldReadsLeaveTheSocketUnwatched() {
        #expect(decide(unsettled: true, held: true) == PollPolicy(timeout: 2, watchesSocket: false))
        #expect(decide(unsettled: true, publishes: true, held: true) == PollPolicy(timeout: 2, watchesSocket: false))
        #expect(decide(closing: true, unsettled: true, held: true) == PollPolicy(timeout: 50, watchesSocket: true))
    }

    func linger(_ milliseconds: Int, trickle: Bool) -> DeliveryBuffer.LingerWait {
        .init(deadline: now + .milliseconds(milliseconds), readsMayWait: trickle)
    }

    @Test func anIdleThreadWakesAtAQuarterOfTheHeartbeatBetween50MsAndASecond() {
        #expect(decide(heartbeat: .seconds(15)) == PollPolicy(timeout: 1_000, watchesSocket: true))
        #expect(decide(heartbeat: .seconds(2)) == PollPolicy(timeout: 500, watchesSocket: true))
        #expect(decide(heartbeat: .milliseconds(100)) == PollPolicy(timeout: 50, watchesSocket: true))
        #expect(decide(heartbeat: .zero) == PollPolicy(timeout: 1_000, watchesSocket: true), "no heartbeat: once a second")
    }

    @Test func closingAndUnsettledDeliveriesWakeItSooner() {
        #expect(decide(closing: true) == PollPolicy(timeout: 50, watchesSocket: true))
        #expect(decide(unsettled: true) == PollPolicy(timeout: 2, watchesSocket: true), "acks coalesce over 2 ms")
        #expect(decide(closing: true, unsettled: true).timeout == 50)
    }

    @Test func aLingeringBatchWakesItAtTheLingersStepOrEnd() {
        // A step that more deliveries would extend: the socket is still watched.
        #expect(decide(consumers: [linger(7, trickle: false)]) == PollPolicy(timeout: 7, watchesSocket: true))
        // Unsettled deliveries still wake it first.
        #expect(decide(unsettled: true, consumers: [linger(7, trickle: false)]) == PollPolicy(timeout: 2, watchesSocket: true))
        // A deadline already past: no sleep.
        #expect(decide(consumers: [linger(-3, trickle: true)]) == PollPolicy(timeout: 0, watchesSocket: false))
    }

    @Test func onATrickleTheSocketWaitsForTheLingersEndOnlyWhenNothingElseNeedsIt() {
        // Every consumer lingers on a trickle, nothing awaits the broker: one read at the end.
        #expect(decide(unsettled: true, consumers: [linger(9, trickle: true), linger(4, trickle: true)])
            == PollPolicy(timeout: 4, watchesSocket: false))
        // A publish awaiting its confirm needs the socket.
        #expect(decide(publishes: true, consumers: [linger(9, trickle: true)]) == PollPolicy(timeout: 9, watchesSocket: true))
        // So does a consumer that does not linger, or one whose step more deliveries extend.
        #expect(decide(consumers: [linger(9, trickle: true), nil]) == PollPolicy(timeout: 9, watchesSocket: true))
        #expect(decide(consumers: [linger(9, trickle: true), linger(6, trickle: false)]) == PollPolicy(timeout: 6, watchesSocket: true))
        // And a thread that is closing.
        #expect(decide(closing: true, consumers: [linger(90, trickle: true)]) == PollPolicy(timeout: 50, watchesSocket: true))
    }

    @Test func theThreadSleepsWholeMillisecondsUntilADeadline() {
        #expect(PollPolicy.milliseconds(until: now + .microseconds(1_200), now: now) == 2, "rounded up")
        #expect(PollPolicy.milliseconds(until: now + .milliseconds(3), now: now) == 3)
        #expect(PollPolicy.milliseconds(until: now - .milliseconds(3), now: now) == 0, "past: no sleep")
        #expect(PollPolicy.milliseconds(until: now + .seconds(90), now: now) == 1_000, "at most a second")
    }
}
