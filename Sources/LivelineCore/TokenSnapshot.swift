import LivelineModels

/// The push targets known for an activity and its user at translation time.
public struct TokenSnapshot: Codable, Hashable, Sendable {
    /// The activity's update tokens (hex), one per device the activity runs on.
    public var updateTokens: [String]
    /// The user's push-to-start token (hex) for the domain's attributes type.
    public var pushToStartToken: String?
    /// The tokens among these registered for APNs' sandbox (development builds); every
    /// other token is production's. Lower-case hex.
    public var sandboxTokens: Set<String>

    /// Creates a token snapshot.
    public init(updateTokens: [String] = [], pushToStartToken: String? = nil, sandboxTokens: Set<String> = []) {
        self.updateTokens = updateTokens
        self.pushToStartToken = pushToStartToken
        self.sandboxTokens = sandboxTokens
    }

    /// The APNs environment of `token` (lower-case hex).
    public func environment(of token: String) -> APNsEnvironment {
        sandboxTokens.contains(token) ? .sandbox : .production
    }
}
