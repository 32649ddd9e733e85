import LivelineLogging

// Tests: Tests/LivelineRuntimeTests/LogKeyTests.swift

/// Every logger metadata key of the process wiring: startup, the embedded simulator, the
/// `liveline` commands.
public enum RuntimeLogKey: String, LogKey {
    /// A dependency (broker, store) tried again at start.
    case attempt = "liveline.attempt"
    case retryIn = "liveline.retry_in"
    case error = "liveline.error"
    /// The store's kind and place (a PostgreSQL URL is redacted).
    case store = "liveline.store"
    case port = "liveline.port"
    /// `liveline.ops.drain-timeout-seconds`, when a drain overran it.
    case drainTimeout = "liveline.drain_timeout"
    /// The producer whose webhook is posted to, and how many outcomes the post carried (or
    /// how many messages on the outcomes queue were not outcomes).
    case producer = "liveline.producer"
    case outcomes = "liveline.outcomes"
    case simulatorAddress = "simulator.address"
    case simulatorTLS = "simulator.tls"
    case simulatorCertificate = "simulator.certificate"
}
