import Synchronization

/// Keeps one activity's sends in queue order while different activities go in parallel.
///
/// ActivityKit ignores a push whose `aps.timestamp` is not newer than the last one it
/// showed, so an update overtaken by a newer one is a wasted push (and may have spent
/// priority-10 budget). Each activity gets a lane: a send starts only after the previous send
/// of the same activity finished. Lanes of activities with nothing in flight are dropped.
final class ActivityLanes: Sendable {
    private struct Lane {
        var id: UInt64
        var tail: Task<Void, Never>
    }

    private let lanes = Mutex<(next: UInt64, byActivity: [String: Lane])>((0, [:]))

    /// Runs `work` after the previous work of `activity` (immediately when there is none or
    /// the activity is unknown), and returns when it is done.
    func run(activity: String?, _ work: @escaping @Sendable () async -> Void) async {
        guard let activity else { return await work() }
        let task = lanes.withLock { state -> Task<Void, Never> in
            let previous = state.byActivity[activity]?.tail
            let id = state.next
            state.next += 1
            let tail = Task {
                await previous?.value
                await work()
                self.finished(activity: activity, id: id)
            }
            state.byActivity[activity] = Lane(id: id, tail: tail)
            return tail
        }
        await task.value
    }

    private func finished(activity: String, id: UInt64) {
        lanes.withLock { state in
            if state.byActivity[activity]?.id == id { state.byActivity[activity] = nil }
        }
    }

    /// Activities with sends in flight (for tests and metrics).
    var activeCount: Int { lanes.withLock { $0.byActivity.count } }
}
