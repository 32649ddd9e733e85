// Tests: none needed (declarations only)

/// How a domain's pushes reach devices.
public enum DeliveryMode: String, Codable, Hashable, Sendable {
    /// One push per activity update token (and push-to-start when there is none).
    case deviceTokens
    /// One broadcast push to the activity's APNs channel (iOS 18); cannot start.
    case channel
}
