import LivelineLogging

// Tests: Tests/LivelineRuntimeTests/LogKeyTests.swift

/// Every logger metadata key of the api.
public enum APILogKey: String, LogKey {
    /// The authenticated caller.
    case userID = "api.user_id"
    /// The producer that sent events over HTTPS.
    case producer = "api.producer"
    case activityID = "api.activity_id"
    /// The first characters of a push token, never all of it.
    case tokenPrefix = "api.token_prefix"
    /// What a registration did (created, refreshed, ...).
    case outcome = "api.outcome"
    case error = "api.error"
}
