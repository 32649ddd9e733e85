/// How long the connection's owner thread sleeps in `poll` when it has nothing to do, and
/// whether the poll watches the socket or only the thread's wake-up: the driver's one
/// decision about time, kept apart from its I/O so a test can state it.
///
/// - A thread that is closing wakes every 50 ms, to see its last confirms and its grace end.
/// - Deliveries that were handed out and not settled yet: every 2 ms. Settlements never wake
///   the thread, so acks made within that interval go out as one `multiple` ack.
/// - Otherwise it wakes often enough to send heartbeats and notice a silent broker: a
///   quarter of the heartbeat, between 50 ms and a second.
/// - A consumer whose batch lingers is woken no later than the linger's step or end
///   (``DeliveryBuffer/lingerWait``). When every consumer lingers on a trickle and no publish
///   awaits the broker, the socket is left unread until the lingers end: one read of what
///   came meanwhile instead of one per message.
/// - While the consumers hold more delivered bytes than they may (`readsHeld`), the socket is
///   not watched, and the thread wakes every 2 ms to see whether settlements freed enough.
struct PollPolicy: Equatable {
    /// Milliseconds `poll` may wait.
    var timeout: Int32
    /// Whether the socket is watched too; false leaves it unread until the timeout.
    var watchesSocket: Bool

    static func decide(
        heartbeat: Duration, closing: Bool, unsettledDeliveries: Bool, publishesAwaitBroker: Bool,
        consumers: [DeliveryBuffer.LingerWait?], readsHeld: Bool = false, now: ContinuousClock.Instant
    ) -> PollPolicy {
        if readsHeld, !closing { return PollPolicy(timeout: 2, watchesSocket: false) }
        let heartbeatMS = Int32(clamping: Int64(heartbeat / .milliseconds(1)))
        let idle = heartbeatMS > 0 ? min(1000, max(50, heartbeatMS / 4)) : 1000
        let timeout: Int32 = closing ? 50 : (unsettledDeliveries ? 2 : idle)
        var readsWait = !closing && !consumers.isEmpty && !publishesAwaitBroker
        var lingerTimeout = idle
        for wait in consumers {
            guard let wait else {
                readsWait = false
                continue
            }
            lingerTimeout = min(lingerTimeout, milliseconds(until: wait.deadline, now: now))
            readsWait = readsWait && wait.readsMayWait
        }
        return PollPolicy(timeout: readsWait ? lingerTimeout : min(timeout, lingerTimeout), watchesSocket: !readsWait)
    }

    /// Whole milliseconds from `now` to `deadline`, rounded up so a poll does not wake early;
    /// at most a second, the longest the thread sleeps.
    static func milliseconds(until deadline: ContinuousClock.Instant, now: ContinuousClock.Instant) -> Int32 {
        let remaining = deadline - now
        guard remaining > .zero else { return 0 }
        guard remaining < .seconds(1) else { return 1_000 }
        return Int32((remaining.components.attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }
}
