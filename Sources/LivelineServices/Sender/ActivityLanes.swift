import LivelineCore
import Synchronization

/// Keeps the sends of one lane (an activity's pushes to one target, ``PushTarget/laneKey(activity:)``)
/// in queue order while different lanes go in parallel.
///
/// ActivityKit ignores a push whose `aps.timestamp` is not newer than the last one it
/// showed on that device, so an update overtaken by a newer one is a wasted push (and may
/// have spent priority-10 budget). The consumer loop takes a place in the job's lane for
/// each job (a delivery carries one, or a bundle), in queue order (``enter(activity:)``, keyed by the job's lane), and the
/// send's task runs only when the sends before it in the lane finished (``run(_:_:)``).
/// A game's start for 100,000 devices is 100,000 lanes, sent in parallel: one lane per
/// activity held them to one push at a time (2,500 starts/s, measured).
///
/// The lane also coalesces a backlog: an update whose turn comes while a newer job for the
/// same target already waits behind it is superseded (``PushJob/supersedes(_:)``), so it
/// is not sent (DESIGN §4).
/// Fifty queued updates of one ride reach the device as the one in flight and the newest,
/// not fifty pushes, and each skipped one is counted and traced.
///
/// A lane exists only while its activity has sends in flight; the common case (no other
/// send of the activity in flight) costs three locks and no task or continuation.
final class ActivityLanes: Sendable {
    /// A place in an activity's lane.
    struct Ticket: Sendable {
        fileprivate let activity: LaneKey?
        fileprivate let number: UInt64
        fileprivate let isFirst: Bool
    }

    /// A lane's key with its hash taken once: a send looks its lane up four times, and hashing
    /// the key's 60-odd bytes each time cost 2,000 instructions a push.
    fileprivate struct LaneKey: Hashable, Sendable {
        let text: String
        let hash: Int

        init(_ text: String) {
            self.text = text
            hash = text.hashValue
        }

        static func == (lhs: LaneKey, rhs: LaneKey) -> Bool { lhs.hash == rhs.hash && lhs.text == rhs.text }
        func hash(into hasher: inout Hasher) { hasher.combine(hash) }
    }

    private struct Lane {
        /// Tickets in line, the one running first, each with its job once noted. One array, not
        /// a line and a dictionary of jobs: nearly every lane holds one ticket, and the
        /// dictionary was an allocation and a resize per push.
        var line: [(number: UInt64, job: PushJob?)] = []
        /// Tickets whose task waits for its turn.
        var waiting: [UInt64: CheckedContinuation<Void, Never>] = [:]

        /// Whether a job after ticket `number` supersedes its job.
        func isSuperseded(_ number: UInt64) -> Bool {
            guard let position = line.firstIndex(where: { $0.number == number }),
                let mine = line[position].job, mine.event == .update
            else { return false }
            return line[(position + 1)...].contains { $0.job?.supersedes(mine) ?? false }
        }
    }

    private struct State {
        var nextNumber: UInt64 = 0
        var lanes: [LaneKey: Lane] = [:]
    }

    private let state = Mutex(State())
    private let newest: NewestSent

    /// `newest` is the sender's, shared by the lanes of every shard it holds.
    init(newest: NewestSent = NewestSent()) {
        self.newest = newest
    }

    /// Takes the next place in `activity`'s lane. Call in queue order.
    func enter(activity: String?) -> Ticket {
        guard let activity = activity.map(LaneKey.init) else { return Ticket(activity: nil, number: 0, isFirst: true) }
        return state.withLock { state in
            let number = state.nextNumber
            state.nextNumber += 1
            var isFirst = false
            // One hash of the key: `lanes[activity, default:]` changed in place.
            modify(&state.lanes[activity, default: Lane()]) { lane in
                lane.line.append((number, nil))
                isFirst = lane.line.count == 1
            }
            return Ticket(activity: activity, number: number, isFirst: isFirst)
        }
    }

    /// Says which job the ticket carries, so the earlier updates in line that it
    /// supersedes are not sent. Call before ``run(_:_:)``.
    func note(_ ticket: Ticket, job: PushJob) {
        guard let activity = ticket.activity else { return }
        state.withLock { state in
            guard let index = state.lanes.index(forKey: activity),
                let position = state.lanes.values[index].line.firstIndex(where: { $0.number == ticket.number })
            else { return }
            state.lanes.values[index].line[position].job = job
        }
    }

    /// Runs `work` once every earlier ticket of the lane finished, then lets the next run.
    /// `work` is told whether a newer job of the lane overtook `job` (the one noted): queued
    /// behind it, or had its turn before it (``NewestSent``; `replayed` by on-call, it went
    /// out on purpose).
    func run(
        _ ticket: Ticket, job: PushJob? = nil, replayed: Bool = false, _ work: (_ overtaken: Overtaking?) async -> Void
    ) async {
        guard let activity = ticket.activity else { return await work(nil) }
        if !ticket.isFirst {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let runNow = state.withLock { state -> Bool in
                    // The tickets before it may all have finished already.
                    if state.lanes[activity]?.line.first?.number == ticket.number { return true }
                    state.lanes[activity]?.waiting[ticket.number] = continuation
                    return false
                }
                if runNow { continuation.resume() }
            }
        }
        let superseded = state.withLock { $0.lanes[activity]?.isSuperseded(ticket.number) ?? false }
        if superseded {
            await work(.queued)
        } else {
            await work(job.map { newest.isOvertaken($0, lane: activity.hash, replayed: replayed) } == true ? .sent : nil)
        }
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            // Changed in place through its index: a copy of the lane taken out and stored
            // back would copy its line and its jobs on every send (a profile showed it).
            guard let index = state.lanes.index(forKey: activity) else { return nil }
            state.lanes.values[index].line.removeFirst()
            guard let following = state.lanes.values[index].line.first?.number else {
                state.lanes.remove(at: index)
                return nil
            }
            return state.lanes.values[index].waiting.removeValue(forKey: following)
        }
        // When the next ticket's task is not waiting yet, it finds itself first in line.
        next?.resume()
    }

    /// Activities with sends in flight (for tests and metrics).
    var activeCount: Int { state.withLock { $0.lanes.count } }

    /// Runs `change` on a value in place (here, a dictionary entry reached through one lookup).
    private func modify<Value>(_ value: inout Value, _ change: (inout Value) -> Void) {
        change(&value)
    }
}
