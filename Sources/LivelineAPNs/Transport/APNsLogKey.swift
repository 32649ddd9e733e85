import LivelineLogging

// Tests: Tests/LivelineRuntimeTests/LogKeyTests.swift

/// Every logger metadata key of the APNs client. None of them ever carries a device token,
/// the provider key or a JWT.
public enum APNsLogKey: String, LogKey {
    case bundleID = "apns.bundle_id"
    case connection = "apns.connection"
    case maximumStreams = "apns.max_streams"
    case wasReady = "apns.was_ready"
    case host = "apns.host"
    case error = "apns.error"
    case why = "apns.why"
    case failures = "apns.failures"
}
