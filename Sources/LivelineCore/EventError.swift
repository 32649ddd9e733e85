// Tests: Tests/LivelineCoreTests/EnvelopeParsingTests.swift

/// Why an incoming event could not be read. Each case names the exact field or rule,
/// so a dead letter tells the producing team what to fix.
public enum EventError: Error, Hashable, Sendable {
    /// The message is larger than the configured maximum.
    case tooLarge(bytes: Int, limit: Int)
    /// The bytes are not JSON at all.
    case notJSON(String)
    /// JSON, but not a CloudEvents structured-mode object (e.g. an array, or no `specversion`).
    case notCloudEvent(String)
    /// A CloudEvents version other than 1.0.
    case unsupportedSpecVersion(String)
    /// A required field is absent; the path is dotted, e.g. `data.activityId`.
    case missingField(String)
    /// A field has the wrong JSON type.
    case mistypedField(String, expected: String, found: String)
    /// A field has the right type but a value Liveline cannot use (empty, bad time…).
    case invalidField(String, reason: String)
    /// The `type` names a domain that is not configured.
    case unknownDomain(String)
    /// The `bundleid` names an app the domain does not serve.
    case unknownApp(String, domain: String)
    /// The status is not one the domain knows.
    case unknownStatus(domain: String, status: String)
    /// `data.contentState` does not decode into the domain's ContentState type.
    case contentStateMismatch(domain: String, detail: String)
    /// `data.attributes` does not decode into the domain's attributes type.
    case attributesMismatch(domain: String, detail: String)

    /// The dead-letter reason for this error: shape errors against the Swift model
    /// are `schema-mismatch`, an app the domain does not serve `unknown-app`, everything else
    /// about the envelope is `invalid-event`.
    public var deadLetterReason: DeadLetterReason {
        switch self {
        case .contentStateMismatch, .attributesMismatch: .schemaMismatch
        case .unknownApp: .unknownApp
        default: .invalidEvent
        }
    }

    /// A one-line explanation for logs and dead letters.
    public var message: String {
        switch self {
        case .tooLarge(let bytes, let limit): "event is \(bytes) bytes, more than the \(limit)-byte limit"
        case .notJSON(let detail): "event is not JSON: \(detail)"
        case .notCloudEvent(let detail): "not a CloudEvents 1.0 structured-mode event: \(detail)"
        case .unsupportedSpecVersion(let version): "specversion \"\(version)\" is not supported (expected \"1.0\")"
        case .missingField(let path): "missing required field \(path)"
        case .mistypedField(let path, let expected, let found): "field \(path) must be \(expected), found \(found)"
        case .invalidField(let path, let reason): "field \(path) is invalid: \(reason)"
        case .unknownDomain(let domain): "unknown domain \"\(domain)\""
        case .unknownApp(let app, let domain): "domain \(domain) does not serve app \(app) (its apps in the domain's configuration)"
        case .unknownStatus(let domain, let status): "unknown status \"\(status)\" for domain \(domain)"
        case .contentStateMismatch(let domain, let detail): "data.contentState does not match the \(domain) ContentState: \(detail)"
        case .attributesMismatch(let domain, let detail): "data.attributes does not match the \(domain) attributes: \(detail)"
        }
    }
}
