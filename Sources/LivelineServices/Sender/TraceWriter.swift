import Foundation
import Logging
import LivelineStore
import Synchronization

/// Appends trace entries in group commits: every caller adds its entry and awaits the
/// commit that carries it, and one transaction carries every entry that arrived in the
/// last few milliseconds. One transaction per push would cap the sender at the store's
/// commit rate; one per batch makes tracing nearly free.
///
/// A batch is committed when it reaches `batchSize` entries (by the caller that filled
/// it) or when ``run()`` finds it waiting at its next tick.
final class TraceWriter: Sendable {
    private struct State {
        var pending: [TraceEntry] = []
        var waiters: [CheckedContinuation<Void, Never>] = []
        var finished = false
    }

    private let store: any SenderStore
    private let interval: Duration
    private let batchSize: Int
    private let logger: Logger
    private let metrics: SenderMetrics
    private let state = Mutex(State())

    init(store: any SenderStore, interval: Duration, batchSize: Int, metrics: SenderMetrics, logger: Logger) {
        self.store = store
        self.interval = interval
        self.batchSize = batchSize
        self.metrics = metrics
        self.logger = logger
    }

    /// Appends `entries` and returns once they are committed (or their commit failed,
    /// which is logged and counted: a trace is for people, and failing the push because
    /// its trace line could not be written would resend a push APNs already took).
    func append(_ entries: [TraceEntry]) async {
        guard !entries.isEmpty else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let batch: (entries: [TraceEntry], waiters: [CheckedContinuation<Void, Never>])? = state.withLock { state in
                state.pending.append(contentsOf: entries)
                state.waiters.append(continuation)
                // After finish() there is no ticker any more, so every caller commits its own.
                guard state.pending.count >= batchSize || state.finished else { return nil }
                return Self.take(&state)
            }
            if let batch {
                // Commit on a fresh task so this caller's continuation is not resumed from
                // inside its own closure, and the caller that filled the batch does not
                // block the others' executor.
                Task { await self.commit(batch.entries, batch.waiters) }
            }
        }
    }

    /// Commits what waits every `interval` until ``finish()``, then commits the rest.
    func run() async {
        while !state.withLock({ $0.finished }) {
            do {
                try await Task.sleep(for: interval)
            } catch {
                // Cancelled: stop ticking, but appends still in flight must not wait for a
                // tick that never comes, so they commit on their own from now on.
                finish()
                break
            }
            await flush()
        }
        await flush()
    }

    /// Stops the ticker; later appends commit on their own.
    func finish() {
        state.withLock { $0.finished = true }
    }

    /// Commits whatever waits now.
    func flush() async {
        let batch = state.withLock { Self.take(&$0) }
        guard !batch.waiters.isEmpty else { return }
        await commit(batch.entries, batch.waiters)
    }

    private static func take(_ state: inout State) -> (entries: [TraceEntry], waiters: [CheckedContinuation<Void, Never>]) {
        defer {
            state.pending = []
            state.waiters = []
        }
        return (state.pending, state.waiters)
    }

    private func commit(_ entries: [TraceEntry], _ waiters: [CheckedContinuation<Void, Never>]) async {
        do {
            try await store.appendTrace(entries)
        } catch {
            metrics.traceFailed(count: entries.count)
            logger.error(
                "sender trace commit failed",
                metadata: ["trace.entries": "\(entries.count)", "error": "\(error)"]
            )
        }
        for waiter in waiters { waiter.resume() }
    }
}
