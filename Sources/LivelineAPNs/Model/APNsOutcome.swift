// Tests: Tests/LivelineAPNsTests/ModelTests.swift

/// What the caller should do with a push after APNs (or the transport) answered.
///
/// The classification follows DESIGN.md §5 so the sender can map each outcome to a queue action
/// without looking at status codes itself.
public enum APNsOutcome: Hashable, Sendable {
    /// 200: delivered to APNs.
    case success
    /// 5xx, a transport failure, a reset or a GOAWAY that the client could not absorb. Try again later
    /// with backoff; APNs did not take the push.
    case retriable
    /// 410 Unregistered/ExpiredToken, 400 BadDeviceToken, 400 DeviceTokenNotForTopic: the token is
    /// dead for this topic. Delete it (for 410, only if not registered again after ``APNsError/timestamp``).
    case tokenInvalid
    /// 429 TooManyRequests: back off for this device token.
    case throttled
    /// 403 ExpiredProviderToken (after the client's one internal refresh-and-retry), InvalidProviderToken,
    /// TooManyProviderTokenUpdates and the other provider-authentication failures: the team's key or
    /// clock is wrong; every push of this app fails the same way until an operator acts.
    case providerToken
    /// 413 and every other 4xx: sending the same push again will fail again. Dead-letter it.
    case permanent

    /// Classifies an HTTP status and reason the way DESIGN.md §5 prescribes.
    public static func classify(status: Int, reason: APNsReason?) -> APNsOutcome {
        switch (status, reason) {
        case (200..<300, _):
            return .success
        case (410, _):
            return .tokenInvalid
        case (400, .badDeviceToken?), (400, .deviceTokenNotForTopic?):
            return .tokenInvalid
        case (429, .tooManyProviderTokenUpdates?):
            return .providerToken
        case (429, _):
            return .throttled
        case (403, _):
            return .providerToken
        case (500..<600, _):
            return .retriable
        default:
            return .permanent
        }
    }
}
