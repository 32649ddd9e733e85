import Foundation
import LivelineLogging
import LivelineStore
import Logging
import Metrics
import ServiceLifecycle

// Tests: Tests/LivelineServicesTests/ReplayDecisionTests.swift

/// Deletes what the store no longer needs to keep (``RetentionCutoffs``): old trace lines,
/// ended activities with their tokens, push-to-start tokens no app refreshed, old dead
/// letters, the follows of users with no device left, old audit entries and the ids of events
/// taken over HTTPS. At start and then every
/// ``Settings/interval``, in batches of ``Settings/batchSize`` rows a kind with a pause
/// between them, so a prune of millions of rows never holds the store for long, and takes
/// no more than ``Settings/busyShare`` of the time: the store's CPU is the workers' too.
/// Every translator and sender runs one; several at once only find less to delete.
public struct RetentionPruner: Service {
    /// How long each kind is kept, and how the pruning is paced.
    public struct Settings: Sendable {
        /// Trace lines (`liveline.trace.retention-days`, default 7).
        public var trace: Duration
        /// Ended activities (`liveline.retention.activity-days`, default 30).
        public var activities: Duration
        /// Push-to-start tokens since they were last registered (`liveline.retention.push-to-start-days`, default 180).
        public var pushToStartTokens: Duration
        /// Dead letters since they last failed (`liveline.retention.dead-letter-days`, default 90).
        public var deadLetters: Duration
        /// Follows of users with no device left (`liveline.retention.follow-days`, default 30).
        public var follows: Duration
        /// Audit entries of on-call actions (`liveline.retention.audit-days`, default 365).
        public var audit: Duration
        /// Ids of events taken over HTTPS, the producers' idempotency keys (`liveline.retention.event-id-days`, default 7).
        public var eventClaims: Duration
        public var interval: Duration
        public var batchSize: Int
        /// Between batches at least, so the workers' writes go first.
        public var pause: Duration
        /// The most of the time spent deleting (0.01–1): after a batch that took `t`, the pause
        /// is at least `t × (1 − busyShare) / busyShare`.
        public var busyShare: Double

        public init(
            trace: Duration = .seconds(7 * 86_400), activities: Duration = .seconds(30 * 86_400),
            pushToStartTokens: Duration = .seconds(180 * 86_400), deadLetters: Duration = .seconds(90 * 86_400),
            follows: Duration = .seconds(30 * 86_400), audit: Duration = .seconds(365 * 86_400),
            eventClaims: Duration = .seconds(7 * 86_400), interval: Duration = .seconds(3_600),
            batchSize: Int = 500, pause: Duration = .milliseconds(20), busyShare: Double = 0.1
        ) {
            self.trace = trace
            self.activities = activities
            self.pushToStartTokens = pushToStartTokens
            self.deadLetters = deadLetters
            self.follows = follows
            self.audit = audit
            self.eventClaims = eventClaims
            self.interval = interval
            self.batchSize = max(1, batchSize)
            self.pause = pause
            self.busyShare = min(1, max(0.01, busyShare))
        }

        /// The pause after a batch that took `batch`.
        public func pause(after batch: Duration) -> Duration {
            max(pause, batch * ((1 - busyShare) / busyShare))
        }

        /// What is older than its kind's retention at `now`.
        public func cutoffs(now: Date) -> RetentionCutoffs {
            func before(_ kept: Duration) -> Date { now.addingTimeInterval(-TimeInterval(kept.components.seconds)) }
            return RetentionCutoffs(
                traceBefore: before(trace), activitiesBefore: before(activities),
                pushToStartTokensBefore: before(pushToStartTokens), deadLettersBefore: before(deadLetters),
                followsBefore: before(follows), auditBefore: before(audit),
                eventClaimsBefore: before(eventClaims))
        }
    }

    private let store: any ActivityStore
    private let settings: Settings
    private let logger: Logger
    private let metricsFactory: any MetricsFactory

    public init(
        store: any ActivityStore, settings: Settings = Settings(), logger: Logger,
        metricsFactory: any MetricsFactory = MetricsSystem.factory
    ) {
        self.store = store
        self.settings = settings
        self.logger = logger
        self.metricsFactory = metricsFactory
    }

    public func run() async throws {
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            await prune(now: Date())
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: settings.interval) }
        }
    }

    /// One prune, batch after batch until no kind has more; logged and counted in
    /// `liveline_store_pruned_total`. A failure is logged and tried again at the next interval.
    @discardableResult
    public func prune(now: Date) async -> PruneCounts {
        let cutoffs = settings.cutoffs(now: now)
        var removed = PruneCounts()
        do {
            // A long prune yields to a graceful shutdown between batches: the next one goes on.
            while !Task.isCancelled, !Task.isShuttingDownGracefully {
                let started = ContinuousClock.now
                let batch = try await store.prune(cutoffs, limit: settings.batchSize)
                let took = ContinuousClock.now - started
                removed += batch
                for (kind, count) in batch.byKind where count > 0 {
                    Counter(label: "liveline_store_pruned_total", dimensions: [("kind", kind)], factory: metricsFactory)
                        .increment(by: count)
                }
                guard batch.byKind.contains(where: { $0.count >= settings.batchSize }) else { break }
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: settings.pause(after: took)) }
            }
        } catch {
            logger.warning("could not prune the store", metadata: ServiceLogKey.metadata([.pruneError: "\(error)"]))
        }
        if removed.total > 0 {
            let summary = removed.byKind.filter { $0.count > 0 }.map { "\($0.kind)=\($0.count)" }.joined(separator: " ")
            logger.info("store pruned", metadata: ServiceLogKey.metadata([.pruneRemoved: "\(summary)"]))
        }
        return removed
    }
}
