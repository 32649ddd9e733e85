import LivelineModels

/// The push targets known for an activity and its user at translation time.
public struct TokenSnapshot: Codable, Hashable, Sendable {
    /// The activity's update tokens (hex), one per device the activity runs on.
    public var updateTokens: [String]
    /// The user's unused push-to-start tokens (hex) for the domain's attributes type, one
    /// per device: a start goes to each of them.
    public var pushToStartTokens: [String]
    /// The tokens among these registered for APNs' sandbox (development builds); every
    /// other token is production's. Lower-case hex.
    public var sandboxTokens: Set<String>

    /// Creates a token snapshot.
    public init(updateTokens: [String] = [], pushToStartTokens: [String] = [], sandboxTokens: Set<String> = []) {
        self.updateTokens = updateTokens
        self.pushToStartTokens = pushToStartTokens
        self.sandboxTokens = sandboxTokens
    }

    /// The APNs environment of `token` (lower-case hex).
    public func environment(of token: String) -> APNsEnvironment {
        sandboxTokens.contains(token) ? .sandbox : .production
    }
}
