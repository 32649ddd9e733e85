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
/// it) or `interval` after the first of its entries arrived (by ``run()``). The ticker
/// sleeps only while entries wait: an idle sender ticking every 5 ms woke 200 times a
/// second for nothing, and at 100 pushes/s most of its wake-ups found nothing to commit.
final class TraceWriter: Sendable {
    typealias Committed = @Sendable () -> Void

    private struct State {
        var pending: [TraceEntry] = []
        var followUps: [Committed] = []
        var finished = false
        /// The ticker, while it waits for a first entry.
        var idle: CheckedContinuation<Void, Never>?
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
        let (batch, idle) = state.withLock { state -> ((entries: [TraceEntry], followUps: [Committed])?, CheckedContinuation<Void, Never>?) in
            state.pending.append(contentsOf: entries)
            state.followUps.append(committed)
            // After finish() there is no ticker any more, so every caller commits its own.
            guard state.pending.count >= batchSize || state.finished else { return (nil, Self.wake(&state)) }
            return (Self.take(&state), nil)
        }
        idle?.resume()
        if let batch {
            // Commit on a task of its own so the caller that filled the batch goes on.
            Task { await self.commit(batch.entries, batch.followUps) }
        }
    }

    /// Commits what waits `interval` after its first entry, until ``finish()``, then
    /// commits the rest.
    func run() async {
        while await untilEntriesWait() {
            do {
                try await Task.sleep(for: interval)
            } catch {
                break
            }
            await flush()
        }
        // Finished or cancelled: appends still in flight must not wait for a tick that
        // never comes, so they commit on their own from now on.
        finish()
        await flush()
    }

    /// Stops the ticker; later appends commit on their own.
    func finish() {
        state.withLock { state in
            state.finished = true
            return Self.wake(&state)
        }?.resume()
    }

    /// Suspends while nothing waits; false once finished or cancelled.
    private func untilEntriesWait() async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state in
                    guard state.pending.isEmpty, !state.finished, !Task.isCancelled else { return true }
                    state.idle = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            state.withLock { Self.wake(&$0) }?.resume()
        }
        return !Task.isCancelled && !state.withLock { $0.finished }
    }

    /// Takes the idle ticker's continuation, to resume outside the lock.
    private static func wake(_ state: inout State) -> CheckedContinuation<Void, Never>? {
        defer { state.idle = nil }
        return state.idle
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
