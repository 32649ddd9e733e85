import LivelineCore
import LivelineMessaging

// Tests: Tests/LivelineRuntimeTests/RetryTierSettingsTests.swift

/// How a ``SenderService`` consumes, sends and records outcomes.
public struct SenderSettings: Sendable {
    /// Broker names: the send queue, the retry exchange and tiers, the dead exchange.
    public var topology: LivelineTopology
    /// `basic.qos` prefetch of the send queue. Default 1,000: the sends in flight, the jobs
    /// waiting for their trace commit and ack, and some to spare, so no send slot idles
    /// while acks travel back.
    public var prefetch: UInt16
    /// Sends in flight at once, across every app. Default 400: the streams the default
    /// APNs pool of one app can open (4 connections × 100). More only wait for a stream
    /// (at 500 the rate fell by 5–10 % for it); fewer leave streams idle. A slot is freed
    /// once the outcome is recorded; the trace commit and the ack follow without it.
    public var maximumSendsInFlight: Int
    /// The first back-off after a 429 for a token; it doubles on every further 429 for
    /// the same token, up to ``maximumThrottleBackoff``. Default 5 s.
    public var throttleBackoff: Duration
    /// The longest per-token back-off. Default 10 min.
    public var maximumThrottleBackoff: Duration
    /// The trace writer commits at least this often, and the jobs' acks wait for it.
    /// Default 50 ms. On SQLite every commit also drops the page cache of each other
    /// connection to the file, the translator's among them, which then reads its pages again:
    /// at 5 ms and 1,000 pushes/s the sender's 200 commits a second were half the translator's
    /// page reads (34 a batch against 18). A sender that dies redelivers the jobs of up to
    /// this long, which APNs then receives twice; a Live Activity shows the same state again.
    public var traceFlushInterval: Duration
    /// The trace writer commits as soon as this many entries wait. Default 250: well under
    /// the prefetch less the sends in flight (1,000 − 400), the jobs that can wait for a
    /// commit. At 1,000, a full-speed sender filled its window with jobs waiting for the
    /// 50 ms commit and stalled until it came: 27,760–33,265 pushes/s in alternating drains of
    /// 100,000 jobs, against 33,253–37,838 at 250 and 27,572–35,509 with 5 ms commits.
    public var traceBatchSize: Int
    /// How often the worker looks at the live senders and rebalances the send shards it
    /// holds. Default 1 s.
    public var balanceInterval: Duration
    /// The domains whose pushes' outcomes go to their producers. Default none.
    public var outcomes: OutcomeDomains

    /// Creates settings; every argument has the documented default.
    public init(
        topology: LivelineTopology = LivelineTopology(),
        prefetch: UInt16 = 1_000,
        maximumSendsInFlight: Int = 400,
        throttleBackoff: Duration = .seconds(5),
        maximumThrottleBackoff: Duration = .seconds(600),
        traceFlushInterval: Duration = .milliseconds(50),
        traceBatchSize: Int = 250,
        balanceInterval: Duration = .seconds(1),
        outcomes: OutcomeDomains = .none
    ) {
        self.outcomes = outcomes
        self.balanceInterval = balanceInterval
        self.topology = topology
        self.prefetch = prefetch
        self.maximumSendsInFlight = max(1, maximumSendsInFlight)
        self.throttleBackoff = throttleBackoff
        self.maximumThrottleBackoff = maximumThrottleBackoff
        self.traceFlushInterval = traceFlushInterval
        self.traceBatchSize = max(1, traceBatchSize)
    }
}
