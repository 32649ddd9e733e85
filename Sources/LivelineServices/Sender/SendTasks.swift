import Synchronization

/// The sender's send tasks: long-lived, each running jobs one after another, at most `limit`
/// of them, so at most `limit` sends are in flight.
///
/// A task per job was 10 % of the sender's instructions: the task's creation and
/// destruction, and its frames. A push's chain of async frames (about 4 KB) overflowed the
/// task's first slab, 984 bytes, five times, each a malloc of over a kilobyte, the size at
/// which glibc first consolidates its fast bins, and each freed with the task. A task that
/// lives on keeps its slabs from one job to the next. The consumer loop hands each job to an
/// idle task, or starts one while fewer than `limit` exist, or else waits until a task
/// finishes its job, which then takes the waiting job straight away.
final class SendTasks: Sendable {
    typealias Job = @Sendable () async -> Void

    private struct State {
        var tasks = 0
        /// Tasks waiting for a job, the most recent last (its slabs are the warmest).
        var idle: [CheckedContinuation<Job?, Never>] = []
        /// The consumer loop's job while every task is busy, and the loop waiting for it to be taken.
        var waiting: (job: Job, handedOver: CheckedContinuation<Void, Never>)?
        var finished = false
    }

    private let limit: Int
    private let state = Mutex(State())

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Hands `job` to a send task. Returns the job back when a new task should be started for
    /// it (the caller adds it to its task group with ``run(first:)``); otherwise returns once
    /// a task has it, after waiting for one to finish when all `limit` are busy. Called from
    /// one task, the consumer loop.
    func submit(_ job: @escaping Job) async -> Job? {
        enum Step {
            case hand(CheckedContinuation<Job?, Never>)
            case start
            case wait
        }
        let step = state.withLock { state -> Step in
            if let task = state.idle.popLast() { return .hand(task) }
            guard state.tasks >= limit else {
                state.tasks += 1
                return .start
            }
            return .wait
        }
        switch step {
        case .hand(let task):
            task.resume(returning: job)
            return nil
        case .start:
            return job
        case .wait:
            await withCheckedContinuation { (handedOver: CheckedContinuation<Void, Never>) in
                // A task may have gone idle since the check above.
                let task = state.withLock { state -> CheckedContinuation<Job?, Never>? in
                    if let task = state.idle.popLast() { return task }
                    state.waiting = (job, handedOver)
                    return nil
                }
                if let task {
                    task.resume(returning: job)
                    handedOver.resume()
                }
            }
            return nil
        }
    }

    /// A send task's life: its first job, then every job handed to it, until ``finish()``.
    func run(first: @escaping Job) async {
        var job: Job? = first
        while let current = job {
            await current()
            job = await next()
        }
    }

    /// No more jobs: idle tasks end, busy ones end after their job.
    func finish() {
        let idle = state.withLock { state -> [CheckedContinuation<Job?, Never>] in
            state.finished = true
            defer { state.idle.removeAll() }
            return state.idle
        }
        for task in idle { task.resume(returning: nil) }
    }

    private func next() async -> Job? {
        enum Turn {
            /// The consumer loop's waiting job, taken straight away.
            case take(Job, handedOver: CheckedContinuation<Void, Never>)
            case end
            case park
        }
        return await withCheckedContinuation { (task: CheckedContinuation<Job?, Never>) in
            let turn = state.withLock { state -> Turn in
                if let waiting = state.waiting {
                    state.waiting = nil
                    return .take(waiting.job, handedOver: waiting.handedOver)
                }
                if state.finished { return .end }
                state.idle.append(task)
                return .park
            }
            switch turn {
            case .take(let job, let handedOver):
                task.resume(returning: job)
                handedOver.resume()
            case .end:
                task.resume(returning: nil)
            case .park:
                break
            }
        }
    }
}
