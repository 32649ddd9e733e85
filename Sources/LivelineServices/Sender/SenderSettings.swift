import LivelineMessaging

/// How a ``SenderService`` consumes, sends and records outcomes.
public struct SenderSettings: Sendable {
    /// Broker names: the send queue, the retry exchange and tiers, the dead exchange.
    public var topology: LivelineTopology
    /// `basic.qos` prefetch of the send queue. Default 1,000, twice the sends in flight:
    /// enough to keep every send slot busy while acks travel back.
    public var prefetch: UInt16
    /// Sends in flight at once, across every app. Default 500: against 1,000 it gave the
    /// same rate or better on the reference machine, with p50 send latency 16 ms instead
    /// of 40 ms (more in flight only queues longer behind the same CPU).
    public var maximumSendsInFlight: Int
    /// The first back-off after a 429 for a token; it doubles on every further 429 for
    /// the same token, up to ``maximumThrottleBackoff``. Default 5 s.
    public var throttleBackoff: Duration
    /// The longest per-token back-off. Default 10 min.
    public var maximumThrottleBackoff: Duration
    /// The trace writer commits at least this often. Default 5 ms.
    public var traceFlushInterval: Duration
    /// The trace writer commits as soon as this many entries wait. Default 1,000.
    public var traceBatchSize: Int

    /// Creates settings; every argument has the documented default.
    public init(
        topology: LivelineTopology = LivelineTopology(),
        prefetch: UInt16 = 1_000,
        maximumSendsInFlight: Int = 500,
        throttleBackoff: Duration = .seconds(5),
        maximumThrottleBackoff: Duration = .seconds(600),
        traceFlushInterval: Duration = .milliseconds(5),
        traceBatchSize: Int = 1_000
    ) {
        self.topology = topology
        self.prefetch = prefetch
        self.maximumSendsInFlight = max(1, maximumSendsInFlight)
        self.throttleBackoff = throttleBackoff
        self.maximumThrottleBackoff = maximumThrottleBackoff
        self.traceFlushInterval = traceFlushInterval
        self.traceBatchSize = max(1, traceBatchSize)
    }
}
