import Foundation
import LivelineAMQP
import LivelineLogging
import LivelineStore
import Logging
import Synchronization

/// Appends trace entries in group commits: every caller adds its entries with what must
/// follow their commit (the job's ack), and one transaction carries every entry that
/// arrived in the last few milliseconds. The jobs' outcomes for their producers go out in
/// the same groups, published while the transaction commits. One transaction per push would cap the sender at
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
    /// Told whether the job's end is recorded: false only when its outcome for the producer
    /// could not be published, so the job is requeued and reported again.
    typealias Committed = @Sendable (_ recorded: Bool) -> Void

    private struct FollowUp {
        var run: Committed
        /// The job had an outcome to publish.
        var reported: Bool
    }

    private struct State {
        var pending: [TraceEntry] = []
        var outcomes: [AMQPMessage] = []
        var followUps: [FollowUp] = []
        var finished = false
        /// The ticker, while it waits for a first entry.
        var idle: CheckedContinuation<Void, Never>?
    }

    private let store: any SenderStore
    private let interval: Duration
    private let batchSize: Int
    private let logger: Logger
    private let metrics: SenderMetrics
    private let outcomes: (reporter: OutcomeReporter, connection: AMQPConnection)?
    private let state = Mutex(State())

    init(
        store: any SenderStore, interval: Duration, batchSize: Int, metrics: SenderMetrics, logger: Logger,
        outcomes: (reporter: OutcomeReporter, connection: AMQPConnection)? = nil
    ) {
        self.outcomes = outcomes
        self.store = store
        self.interval = interval
        self.batchSize = batchSize
        self.metrics = metrics
        self.logger = logger
    }

    /// Appends `entries` and `outcomes`, and calls `committed` once the entries are committed,
    /// or their commit failed (which is logged and counted: a trace is for people, and
    /// failing the push because its trace line could not be written would resend a push APNs
    /// already took), and the outcomes are published. Without either, `committed` runs at once.
    func append(_ entries: [TraceEntry], outcomes: [AMQPMessage] = [], then committed: @escaping Committed) {
        guard !entries.isEmpty || !outcomes.isEmpty else { return committed(true) }
        let (batch, idle) = state.withLock { state -> (Batch?, CheckedContinuation<Void, Never>?) in
            state.pending.append(contentsOf: entries)
            state.outcomes.append(contentsOf: outcomes)
            state.followUps.append(FollowUp(run: committed, reported: !outcomes.isEmpty))
            // After finish() there is no ticker any more, so every caller commits its own.
            guard state.pending.count >= batchSize || state.finished else { return (nil, Self.wake(&state)) }
            return (Self.take(&state), nil)
        }
        idle?.resume()
        if let batch {
            // Commit on a task of its own so the caller that filled the batch goes on.
            Task { await self.commit(batch) }
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
        await commit(batch)
    }

    private struct Batch {
        var entries: [TraceEntry]
        var outcomes: [AMQPMessage]
        var followUps: [FollowUp]
    }

    private static func take(_ state: inout State) -> Batch {
        defer {
            state.pending = []
            state.outcomes = []
            state.followUps = []
        }
        return Batch(entries: state.pending, outcomes: state.outcomes, followUps: state.followUps)
    }

    private func commit(_ batch: Batch) async {
        let reported: Bool
        if batch.outcomes.isEmpty {
            // No child task when outcomes are off: the common case pays nothing for them.
            await commitTrace(batch.entries)
            reported = true
        } else {
            // The outcomes' confirm and the trace's transaction overlap.
            async let published = publish(batch.outcomes)
            await commitTrace(batch.entries)
            reported = await published
        }
        for followUp in batch.followUps { followUp.run(reported || !followUp.reported) }
    }

    private func commitTrace(_ entries: [TraceEntry]) async {
        guard !entries.isEmpty else { return }
        do {
            try await store.appendTrace(entries)
        } catch {
            metrics.traceFailed(count: entries.count)
            logger.error(
                "sender trace commit failed",
                metadata: ServiceLogKey.metadata([.traceEntries: "\(entries.count)", .traceError: "\(error)"])
            )
        }
    }

    /// Publishes the outcomes; false if the broker could not take them (a full queue's
    /// refusal is not that: those are dropped and counted).
    private func publish(_ messages: [AMQPMessage]) async -> Bool {
        guard !messages.isEmpty, let outcomes else { return true }
        do {
            try await outcomes.reporter.publish(messages, on: outcomes.connection)
            return true
        } catch {
            logger.error(
                "could not publish outcomes; requeueing their jobs",
                metadata: ServiceLogKey.metadata([.traceEntries: "\(messages.count)", .traceError: "\(error)"])
            )
            return false
        }
    }
}
