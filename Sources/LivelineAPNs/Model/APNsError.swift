import Foundation

// Tests: Tests/LivelineAPNsTests/ConnectionTests.swift, Tests/LivelineServicesTests/SenderDecisionTests.swift

/// A push that did not succeed: an APNs error response or a transport failure.
///
/// Like APNSwift's `APNSError` it carries the HTTP status, the echoed `apns-id`, a typed reason and the
/// 410 timestamp; unlike it, it also carries the ``outcome`` so callers never re-derive the policy.
public struct APNsError: Error, Sendable, CustomStringConvertible {
    /// What to do with the push.
    public let outcome: APNsOutcome
    /// The HTTP status, or `nil` when the request never got an answer (transport failure).
    public let status: Int?
    /// The reason APNs gave, if any.
    public let reason: APNsReason?
    /// The `apns-id` (device pushes) or `apns-request-id` (broadcast, channel management) echoed by APNs.
    public let apnsID: String?
    /// For 410: the last time APNs confirmed the token was no longer valid for the topic.
    public let timestamp: Date?
    /// A short human description of a transport failure; never contains a token or the provider key.
    public let detail: String

    /// `true` when the same push may succeed if sent again later.
    public var isRetriable: Bool { outcome == .retriable || outcome == .throttled }

    public init(
        outcome: APNsOutcome,
        status: Int?,
        reason: APNsReason?,
        apnsID: String?,
        timestamp: Date?,
        detail: String
    ) {
        self.outcome = outcome
        self.status = status
        self.reason = reason
        self.apnsID = apnsID
        self.timestamp = timestamp
        self.detail = detail
    }

    /// A failure below HTTP: connect/TLS failure, connection reset, GOAWAY retries used up, shutdown.
    public static func transport(_ detail: String) -> APNsError {
        APNsError(outcome: .retriable, status: nil, reason: nil, apnsID: nil, timestamp: nil, detail: detail)
    }

    public var description: String {
        var text = "APNsError(\(outcome)"
        if let status { text += ", status: \(status)" }
        if let reason { text += ", reason: \(reason)" }
        if let timestamp { text += ", timestamp: \(timestamp)" }
        if !detail.isEmpty { text += ", \(detail)" }
        return text + ")"
    }
}
