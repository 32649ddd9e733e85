import Foundation

// Tests: Tests/LivelineServicesTests/TranslatorServiceTests.swift, Tests/LivelineRuntimeTests/RetryTierSettingsTests.swift

/// How a ``TranslatorService`` consumes and batches. The defaults suit one worker on a
/// small machine; every field is safe to change at start-up.
public struct TranslatorSettings: Sendable, Hashable {
    /// `basic.qos` prefetch on the translate queue: room for six batches, one in each
    /// stage of the service's pipeline (parse, plan, store, two awaiting confirms) and
    /// one arriving. Default 1,500: measured against 1,000 (four batches), 3-7 % more
    /// events/s, the same broker CPU per event.
    public var prefetch: UInt16
    /// The most events handled in one batch (one store load, one transaction, one
    /// pipelined publish). Default 250: measured against 500, it cut the broker's CPU per
    /// event by a quarter (steadier, smaller bursts of publishes and acks) and raised the
    /// rate by about 8% with SQLite and a third with PostgreSQL
    /// (`liveline.translator.max-batch`).
    public var maxBatchSize: Int
    /// The longest a batch that is not full waits for more events once its first arrived;
    /// under a backlog batches are full and never wait. It waits only while events keep
    /// coming: it stops at the first ``lingerQuiet`` in which none arrived, so a burst that
    /// arrived whole is not held back. Default 10 ms (`liveline.translator.linger-ms`).
    /// At a steady 1,000 events/s, against 5 ms: 20-29 % less translator CPU per event and
    /// about 20 % less sender CPU, for 3.5 ms more at the median and a p99 of 17-18 ms
    /// instead of 12 (15 ms brought the p99 to 22-24 ms, too near the 25 ms target);
    /// docs/PERFORMANCE.md.
    public var linger: Duration
    /// A lingering batch waits in steps this long, and stops after a step in which no event
    /// arrived. Default 2 ms: a steady stream publishes more often than that, and a burst
    /// that arrived whole waits one step. After a batch that lingered to the end and still
    /// was not full, the next waits the whole linger, reading the socket once at its end.
    public var lingerQuiet: Duration
    /// Publish attempts per batch for retriable failures (a full queue's `basic.nack`)
    /// before the batch is requeued. Default 3.
    public var publishAttempts: Int
    /// The pause between publish attempts. Default 200 ms.
    public var publishRetryDelay: Duration
    /// The pause after a failed batch before the next one, so a store outage does not
    /// spin the queue's redeliveries. Default 500 ms.
    public var failureBackoff: Duration
    /// Tasks a batch's parsing is split over (parsing is independent per message and most
    /// of a batch's CPU time). Default: the number of active processors.
    public var parseConcurrency: Int
    /// The priority-10 budget window passed to the store; the core's ``BudgetDecision``
    /// uses one hour, so change both together. Default 3,600 s.
    public var budgetWindowSeconds: Double
    /// The most messages a batch has encoded and unconfirmed at once: a bigger batch (a
    /// game's start for its whole audience) is published in slices of this many, at most
    /// two unconfirmed at once. Default 4,096.
    public var publishSlice: Int
    /// The most jobs of one event in one message (``PushJobBundle``): a game's start for
    /// 100,000 followers is 6,250 messages instead of 100,000. Default 16: the broker's CPU
    /// per start falls from 78-89 µs to about 10, and the start from 11.5-13.1 s to
    /// 6.3-6.7 s (`scripts/bench game`). 32 was no faster (6.6-8.6 s) and took the sender's
    /// peak RSS to 204-208 MiB against 163-166 MiB: its prefetch of 1,000 messages holds that
    /// many bundles. 1 publishes every job alone.
    public var jobsPerMessage: Int
    /// Devices of a shared start's audience read and started at once. A game's start reads
    /// its followers a page at a time, so the translator holds one page's tokens and jobs
    /// whatever the audience. Default 1,024: 44 MiB at the peak of a start for 100,000
    /// followers, against 75 MiB at 4,096, at the same CPU per start (`scripts/bench game`).
    public var audiencePage: Int
    /// How often the worker looks at the live workers and rebalances the shards it holds
    /// (``ShardLeases``). Default 1 s: a worker that joins or leaves is balanced within a few.
    public var balanceInterval: Duration
    /// How often the worker looks for devices to start late into a live game: a fan who
    /// followed one of its topics, or registered a device, after its start. Default 2 s.
    public var lateStartInterval: Duration

    /// Creates settings; every argument has the documented default.
    public init(
        prefetch: UInt16 = 1_500, maxBatchSize: Int = 250, linger: Duration = .milliseconds(10),
        lingerQuiet: Duration = .milliseconds(2),
        publishAttempts: Int = 3, publishRetryDelay: Duration = .milliseconds(200),
        failureBackoff: Duration = .milliseconds(500), budgetWindowSeconds: Double = 3_600,
        parseConcurrency: Int = ProcessInfo.processInfo.activeProcessorCount, publishSlice: Int = 4_096,
        jobsPerMessage: Int = 16, audiencePage: Int = 1_024, balanceInterval: Duration = .seconds(1),
        lateStartInterval: Duration = .seconds(2)
    ) {
        self.audiencePage = max(1, audiencePage)
        self.balanceInterval = balanceInterval
        self.lateStartInterval = lateStartInterval
        self.publishSlice = max(1, publishSlice)
        self.jobsPerMessage = max(1, jobsPerMessage)
        self.prefetch = prefetch
        self.maxBatchSize = max(1, maxBatchSize)
        self.linger = linger
        self.lingerQuiet = lingerQuiet
        self.publishAttempts = max(1, publishAttempts)
        self.publishRetryDelay = publishRetryDelay
        self.failureBackoff = failureBackoff
        self.budgetWindowSeconds = budgetWindowSeconds
        self.parseConcurrency = max(1, parseConcurrency)
    }
}
