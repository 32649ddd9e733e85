import LivelineCore
import Synchronization

/// Keeps one activity's sends in queue order while different activities go in parallel.
///
/// ActivityKit ignores a push whose `aps.timestamp` is not newer than the last one it
/// showed, so an update overtaken by a newer one is a wasted push (and may have spent
/// priority-10 budget). Each activity gets a lane: the consumer loop takes a place in it
/// for each delivery, in queue order (``enter(activity:)``), and the send's task runs
/// only when the sends before it in the lane finished (``run(_:_:)``).
///
/// The lane also coalesces a backlog: an update whose turn comes while a newer update for
/// the same target already waits behind it is superseded, so it is not sent (DESIGN §4).
/// Fifty queued updates of one ride reach the device as the one in flight and the newest,
/// not fifty pushes, and each skipped one is counted and traced.
///
/// A lane exists only while its activity has sends in flight; the common case (no other
/// send of the activity in flight) costs three locks and no task or continuation.
final class ActivityLanes: Sendable {
    /// A place in an activity's lane.
    struct Ticket: Sendable {
        fileprivate let activity: String?
        fileprivate let number: UInt64
        fileprivate let isFirst: Bool
    }

    private struct Lane {
        /// Tickets in line, the one running first.
        var line: [UInt64] = []
        /// Tickets whose task waits for its turn.
        var waiting: [UInt64: CheckedContinuation<Void, Never>] = [:]
        /// The updates in line, by ticket: where each goes and its sequence.
        var updates: [UInt64: (target: PushTarget, sequence: Int64)] = [:]

        /// Whether a ticket after `number` carries a newer update for the same target.
        func isSuperseded(_ number: UInt64) -> Bool {
            guard let mine = updates[number] else { return false }
            return updates.contains { $0.key > number && $0.value.target == mine.target && $0.value.sequence > mine.sequence }
        }
    }

    private struct State {
        var nextNumber: UInt64 = 0
        var lanes: [String: Lane] = [:]
    }

    private let state = Mutex(State())

    /// Takes the next place in `activity`'s lane. Call in queue order.
    func enter(activity: String?) -> Ticket {
        guard let activity else { return Ticket(activity: nil, number: 0, isFirst: true) }
        return state.withLock { state in
            let number = state.nextNumber
            state.nextNumber += 1
            state.lanes[activity, default: Lane()].line.append(number)
            return Ticket(activity: activity, number: number, isFirst: state.lanes[activity]!.line.count == 1)
        }
    }

    /// Says that the ticket's job is an update for `target` with `sequence` (its event
    /// time), so earlier updates of the same target still in line are superseded by it.
    /// Call before ``run(_:_:)``; ends and starts are never noted, so never coalesced.
    func noteUpdate(_ ticket: Ticket, target: PushTarget, sequence: Int64) {
        guard let activity = ticket.activity else { return }
        state.withLock { $0.lanes[activity]?.updates[ticket.number] = (target, sequence) }
    }

    /// Runs `work` once every earlier ticket of the lane finished, then lets the next run.
    /// `work` is told whether a newer update for its target waits behind it.
    func run(_ ticket: Ticket, _ work: (_ superseded: Bool) async -> Void) async {
        guard let activity = ticket.activity else { return await work(false) }
        if !ticket.isFirst {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let runNow = state.withLock { state -> Bool in
                    // The tickets before it may all have finished already.
                    if state.lanes[activity]?.line.first == ticket.number { return true }
                    state.lanes[activity]?.waiting[ticket.number] = continuation
                    return false
                }
                if runNow { continuation.resume() }
            }
        }
        let superseded = state.withLock { $0.lanes[activity]?.isSuperseded(ticket.number) ?? false }
        await work(superseded)
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard var lane = state.lanes[activity] else { return nil }
            lane.line.removeFirst()
            lane.updates[ticket.number] = nil
            guard let following = lane.line.first else {
                state.lanes[activity] = nil
                return nil
            }
            let next = lane.waiting.removeValue(forKey: following)
            state.lanes[activity] = lane
            return next
        }
        // When the next ticket's task is not waiting yet, it finds itself first in line.
        next?.resume()
    }

    /// Activities with sends in flight (for tests and metrics).
    var activeCount: Int { state.withLock { $0.lanes.count } }
}
