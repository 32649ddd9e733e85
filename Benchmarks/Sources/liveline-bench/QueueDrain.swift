import LivelineBenchSupport

// Tests: scripts/bench-smoke

/// Follows one worker draining a full queue: polls how far it is, with a progress bar, and
/// samples its resident memory each time another `every` items are done.
struct QueueDrain {
    var total: Int
    /// What the progress bar counts ("pushes answered").
    var what: String
    var every: Int
    var timeout: Int
    /// Between looks at `done`: each look costs the process that answers it.
    var pause: Duration

    struct Result {
        var seconds: Double
        /// (items done, resident MiB), in order.
        var samples: [(done: Int, rssMiB: Double)]
    }

    /// Returns once `done()` reaches `total`; throws `timedOut(done)` after `timeout`
    /// seconds from `started`.
    func wait(
        for worker: Worker, from started: ContinuousClock.Instant, timedOut: (Int) -> String, done: () async throws -> Int
    ) async throws -> Result {
        let progress = Progress(total: total, what: what)
        let deadline = started + .seconds(timeout)
        var samples: [(done: Int, rssMiB: Double)] = []
        var count = 0
        while count < total {
            guard ContinuousClock.now < deadline else { throw BenchError(timedOut(count)) }
            if count >= (samples.count + 1) * every, let usage = ProcessUsage.of(pid: worker.pid) {
                samples.append((count, usage.rssMiB))
            }
            progress.update(count)
            try await Task.sleep(for: pause)
            count = try await done()
        }
        let seconds = (ContinuousClock.now - started).seconds
        progress.update(total)
        return Result(seconds: seconds, samples: samples)
    }
}
