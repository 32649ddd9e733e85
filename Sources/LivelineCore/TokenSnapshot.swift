/// The push targets known for an activity and its user at translation time.
public struct TokenSnapshot: Codable, Hashable, Sendable {
    /// The activity's update tokens (hex), one per device the activity runs on.
    public var updateTokens: [String]
    /// The user's push-to-start token (hex) for the domain's attributes type.
    public var pushToStartToken: String?

    /// Creates a token snapshot.
    public init(updateTokens: [String] = [], pushToStartToken: String? = nil) {
        self.updateTokens = updateTokens
        self.pushToStartToken = pushToStartToken
    }
}
