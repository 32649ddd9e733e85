import LivelineLogging

// Tests: Tests/LivelineRuntimeTests/LogKeyTests.swift

/// Every logger metadata key of the stores.
public enum StoreLogKey: String, LogKey {
    /// A migration just applied.
    case schemaVersion = "store.schema_version"
    /// A transaction retried after a serialization conflict.
    case attempt = "store.attempt"
}
