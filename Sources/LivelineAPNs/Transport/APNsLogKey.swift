import Logging

/// Every logger metadata key this library uses, in one place (dot notation, `apns.` prefix).
/// None of them ever carries a device token, the provider key or a JWT.
enum APNsLogKey: String {
    case bundleID = "apns.bundle_id"
    case connection = "apns.connection"
    case maximumStreams = "apns.max_streams"
    case wasReady = "apns.was_ready"
    case host = "apns.host"
    case error = "apns.error"
    case why = "apns.why"
    case failures = "apns.failures"
}

extension Logger.Metadata {
    init(_ pairs: KeyValuePairs<APNsLogKey, String>) {
        self.init()
        for (key, value) in pairs {
            self[key.rawValue] = .string(value)
        }
    }
}

extension Logger {
    subscript(apns key: APNsLogKey) -> Logger.Metadata.Value? {
        get { self[metadataKey: key.rawValue] }
        set { self[metadataKey: key.rawValue] = newValue }
    }
}
