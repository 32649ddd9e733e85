import Foundation
import LivelineLogging
import LivelineStore
import Logging
import Synchronization

/// Appends trace entries in group commits: every caller adds its entries with what must
/// follow their commit (the job's ack), and one transaction carries every entry that
/// arrived in the last few milliseconds. One transaction per push would cap the sender at
/// the store's commit rate; one per batch makes tracing nearly free.
///
/// Callers do not wait for the commit: the follow-up runs after it instead. A send slot
/// held through the commit left fewer sends working, and a task suspended per push cost
/// a wake-up each.
///
/// A batch is committed when it reaches `batchSize` entries (by the caller that filled
/// it) or when ``run()`` finds it waiting at its next tick.
final class TraceWriter: Sendable {
    typealias Committed = @Sendable () -> Void

    private struct State {
        var pending: [TraceEntry] = []
        var followUps: [Committed] = []
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

    /// Appends `entries` and calls `committed` once they are committed, or their commit
    /// failed (which is logged and counted: a trace is for people, and failing the push
    /// because its trace line could not be written would resend a push APNs already took).
    /// Without entries, `committed` runs at once.
    func append(_ entries: [TraceEntry], then committed: @escaping Committed) {
        guard !entries.isEmpty else { return committed() }
        let batch: (entries: [TraceEntry], followUps: [Committed])? = state.withLock { state in
            state.pending.append(contentsOf: entries)
            state.followUps.append(committed)
            // After finish() there is no ticker any more, so every caller commits its own.
            guard state.pending.count >= batchSize || state.finished else { return nil }
            return Self.take(&state)
        }
        if let batch {
            // Commit on a task of its own so the caller that filled the batch goes on.
            Task { await self.commit(batch.entries, batch.followUps) }
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
        guard !batch.followUps.isEmpty else { return }
        await commit(batch.entries, batch.followUps)
    }

    private static func take(_ state: inout State) -> (entries: [TraceEntry], followUps: [Committed]) {
        defer {
            state.pending = []
            state.followUps = []
        }
        return (state.pending, state.followUps)
    }

    private func commit(_ entries: [TraceEntry], _ followUps: [Committed]) async {
        do {
            try await store.appendTrace(entries)
        } catch {
            metrics.traceFailed(count: entries.count)
            logger.error(
                "sender trace commit failed",
                metadata: ServiceLogKey.metadata([.traceEntries: "\(entries.count)", .traceError: "\(error)"])
            )
        }
        for followUp in followUps { followUp() }
    }
}
