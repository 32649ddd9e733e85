import Foundation
import LivelineAPNs
import LivelineCore

// Tests: Tests/LivelineServicesTests/SenderDecisionTests.swift

/// What the sender does with a job once APNs (or the transport) answered: the policy of
/// DESIGN §5 as data, so it is tested without a network.
public enum SendResolution: Hashable, Sendable {
    /// 200: done.
    case delivered
    /// 410 Unregistered / ExpiredToken: delete the token unless it was registered again
    /// after `unregisteredAt`; no dead letter (the device simply went away).
    case tokenUnregistered(unregisteredAt: Date?)
    /// 400 BadDeviceToken / DeviceTokenNotForTopic: delete the token and dead-letter, since
    /// a malformed token points at a bug on the app or translator side.
    case tokenRejected(DeadLetterReason)
    /// 429: back off for this token, then try again.
    case throttled
    /// 5xx, GOAWAY, reset, connection failure, or a provider token that is still refused
    /// after the client's own refresh: try again through the retry tiers.
    case retry(reason: String)
    /// 413 and every other 4xx: sending again would fail again.
    case deadLetter(DeadLetterReason, message: String)

    /// Classifies an APNs failure.
    public init(_ error: APNsError) {
        let reasonText = error.reason?.rawValue ?? error.status.map { "HTTP \($0)" } ?? "transport"
        switch error.outcome {
        case .success:
            self = .delivered
        case .tokenInvalid:
            if error.status == 410 {
                self = .tokenUnregistered(unregisteredAt: error.timestamp)
            } else {
                self = .tokenRejected(.apns(reasonText))
            }
        case .throttled:
            self = .throttled
        case .retriable, .providerToken:
            // A provider-token failure is the whole app's, not this job's: retrying lets an
            // operator fix the key or clock without losing the pushes meanwhile.
            self = .retry(reason: error.detail.isEmpty ? reasonText : "\(reasonText): \(error.detail)")
        case .permanent:
            let reason: DeadLetterReason = error.status == 413 ? .payloadTooLarge : .apns(reasonText)
            self = .deadLetter(reason, message: "APNs refused the push: \(error)")
        }
    }

    /// A short label for metrics and traces (`delivered`, `unregistered`, …).
    public var label: String {
        switch self {
        case .delivered: "delivered"
        case .tokenUnregistered: "unregistered"
        case .tokenRejected: "token-rejected"
        case .throttled: "throttled"
        case .retry: "retry"
        case .deadLetter: "dead-letter"
        }
    }
}
