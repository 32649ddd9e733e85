import Logging

// Tests: Tests/LivelineRuntimeTests/LogKeyTests.swift

/// A module's logger metadata keys: an enum whose raw values are the keys, in dot notation
/// with the module's prefix (`amqp.connection`, `sender.error`). Each module keeps one, so
/// every key it logs is listed in one place, a typo does not compile, and a log pipeline
/// can rely on the names (the README lists them). No key ever carries a full device token,
/// a provider key or a JWT.
public protocol LogKey: RawRepresentable, CaseIterable, Hashable, Sendable where RawValue == String {}

extension LogKey {
    /// Metadata for one log call: `AMQPLogKey.metadata([.attempt: "2", .error: "\(error)"])`.
    public static func metadata(_ pairs: KeyValuePairs<Self, String>) -> Logger.Metadata {
        var metadata = Logger.Metadata()
        for (key, value) in pairs { metadata[key.rawValue] = .string(value) }
        return metadata
    }
}

extension Logger {
    /// Metadata attached to every later message of this logger: `logger[AMQPLogKey.broker] = "…"`.
    public subscript<Key: LogKey>(key: Key) -> Metadata.Value? {
        get { self[metadataKey: key.rawValue] }
        set { self[metadataKey: key.rawValue] = newValue }
    }
}
