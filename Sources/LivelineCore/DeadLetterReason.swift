// Tests: Tests/LivelineCoreTests/PrimitivesTests.swift

/// Why a job or event went to `liveline.dead`. Shared by every layer.
///
/// An update whose stale date passed is not here: it is dropped and counted by a
/// documented rule (the device would show it as outdated), not dead-lettered. The broker's
/// own reasons (`delivery_limit`, `rejected`, `expired`) come from `x-death`, not from here.
///
/// The raw value is the canonical string stored with the dead letter: the kebab-case
/// Liveline reasons, or the APNs `reason` verbatim (e.g. `BadDeviceToken`), which is
/// CamelCase and so never collides with a Liveline reason.
public enum DeadLetterReason: Hashable, Sendable, RawRepresentable, Codable, CustomStringConvertible {
    /// Past the per-activity priority-10 hard cap.
    case overBudget
    /// The payload as sent would exceed 4096 bytes.
    case payloadTooLarge
    /// The event could not be read (envelope, fields, domain, status, size).
    case invalidEvent
    /// The content-state or attributes do not match the domain's model.
    case schemaMismatch
    /// A producer's per-event override is outside its domain's bounds.
    case invalidOverride
    /// Transient APNs failures outlasted every retry tier.
    case retriesExhausted
    /// A message on the send queue that is not a push job.
    case invalidJob
    /// The event names an app its domain does not serve, or the job's bundle id has no APNs
    /// credentials in this deployment.
    case unknownApp
    /// An APNs rejection, with APNs's reason string.
    case apns(String)

    /// Reads a canonical string; any string that is not a Liveline reason is taken
    /// as an APNs reason.
    public init(rawValue: String) {
        switch rawValue {
        case "over-budget": self = .overBudget
        case "payload-too-large": self = .payloadTooLarge
        case "invalid-event": self = .invalidEvent
        case "schema-mismatch": self = .schemaMismatch
        case "invalid-override": self = .invalidOverride
        case "retries-exhausted": self = .retriesExhausted
        case "invalid-job": self = .invalidJob
        case "unknown-app": self = .unknownApp
        default: self = .apns(rawValue)
        }
    }

    /// The canonical string.
    public var rawValue: String {
        switch self {
        case .overBudget: "over-budget"
        case .payloadTooLarge: "payload-too-large"
        case .invalidEvent: "invalid-event"
        case .schemaMismatch: "schema-mismatch"
        case .invalidOverride: "invalid-override"
        case .retriesExhausted: "retries-exhausted"
        case .invalidJob: "invalid-job"
        case .unknownApp: "unknown-app"
        case .apns(let reason): reason
        }
    }

    /// The canonical string.
    public var description: String { rawValue }

    /// Decodes from the canonical string.
    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    /// Encodes as the canonical string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
