import LivelineCore
import Synchronization

// Tests: Tests/LivelineServicesTests/ActivityLanesTests.swift

/// The newest job each lane (an activity's pushes to one target) had its turn with in this
/// sender, so an older update that reaches the sender after it is not sent.
///
/// A lane's jobs reach one sender in queue order, but a queue can take a job late: a
/// translator cut off from the broker publishes through the node it was connected to,
/// gives up on the confirm and sends its batch again from another node, newer events
/// follow, and the first copy lands when the cut heals. Sent, it would be the first arrival
/// of an older state after a newer one. ActivityKit would ignore it (its `aps.timestamp` is
/// older), but it spends a push, and budget, on nothing, and it breaks the order the
/// fault suite proves. A job back from a retry tier is checked against the store's last
/// applied event instead (``SendGate``); this covers first attempts at no store read.
///
/// Kept for the process's life across shards and reconnects, in two generations of
/// `capacity` lanes each: when the newer fills, the older is forgotten. A lane is known by
/// its key's hash alone (16 bytes a lane, not the 60-byte key); two lanes with one 64-bit
/// hash among a few hundred thousand are a chance of about one in 10^9, and would cost at
/// worst one update, whose newer state the device gets anyway.
///
/// Each generation's storage is reserved when it starts and never grows: a dictionary holds
/// at most three quarters of its buckets, a power of two, so 98,304 lanes fill 2^17 buckets
/// (2 MiB) exactly. At 100,000 a generation took 2^18 buckets (4 MiB), and grew to them by
/// doubling, the old table and the new one both held while it copied: a sender that had
/// pushed to a million activities held about twice the memory for the same lanes.
final class NewestSent: Sendable {
    private struct State {
        var current: [Int: Int64]
        var previous: [Int: Int64] = [:]
    }

    private let state: Mutex<State>
    private let capacity: Int

    init(capacity: Int = 3 << 15) {
        self.capacity = capacity
        // Untouched until lanes fill it: the pages of a reserved table are not resident before.
        state = Mutex(State(current: Dictionary(minimumCapacity: capacity)))
    }

    /// Whether `job` is an update older than one its lane (`lane`, the key's hash) already had
    /// its turn with; if not, the job becomes the lane's newest.
    ///
    /// An alert or priority-10 update is overtaken too: the device would ignore it, as its
    /// `aps.timestamp` is older than the one it showed, so the alert would never show. Only a
    /// `replayed` job is not: `dlq replay` sends an overtaken alert again on purpose, with the
    /// current state and a raised timestamp but its own sequence.
    func isOvertaken(_ job: PushJob, lane: Int, replayed: Bool = false) -> Bool {
        state.withLock { state in
            let newest = max(state.current[lane] ?? .min, state.previous[lane] ?? .min)
            if job.event == .update, !replayed, job.sequence < newest { return true }
            guard job.sequence > newest else { return false }
            if state.current.count >= capacity, state.current[lane] == nil {
                state.previous = state.current
                state.current = Dictionary(minimumCapacity: capacity)
            }
            state.current[lane] = job.sequence
            return false
        }
    }

    /// Lanes remembered (for tests).
    var count: Int { state.withLock { $0.current.count + $0.previous.count } }

    /// The lanes each generation's storage holds without growing (for tests).
    var storage: (current: Int, previous: Int) { state.withLock { ($0.current.capacity, $0.previous.capacity) } }
}
