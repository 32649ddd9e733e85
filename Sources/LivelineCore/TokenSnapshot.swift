import LivelineModels

// Tests: Tests/LivelineCoreTests/TargetingTests.swift

/// The push targets known for an activity and its user at translation time.
public struct TokenSnapshot: Codable, Hashable, Sendable {
    /// The activity's update tokens (hex), one per device the activity runs on.
    public var updateTokens: [String]
    /// The user's push-to-start tokens (hex) for the domain's attributes type, one
    /// per device: a start goes to each of them.
    public var pushToStartTokens: [String]
    /// The tokens among these registered for APNs' sandbox (development builds); every
    /// other token is production's. Lower-case hex.
    public var sandboxTokens: Set<String>
    /// A shared activity's live broadcast channel id, once created.
    public var channelID: String?
    /// For a shared activity's start (an event with `topics`): the push-to-start
    /// tokens of every device whose user follows one of the topics, one per device.
    public var audience: [String]
    /// The iOS version each device reported with its token (`18.1`), by lower-case token;
    /// absent for devices that reported none.
    public var osVersions: [String: String]
    /// The locale each device's app registered with its token (`de-AT`), by lower-case token;
    /// absent for devices that registered none. Picks an alert's language.
    public var locales: [String: String]
    /// The content-state version each device's app declared with its token, by lower-case
    /// token; absent for devices that declared none (taken as the current version).
    public var contentVersions: [String: Int]
    /// The content-state version broadcasts carry: the oldest registered for the domain, for
    /// a channel whose older devices listen too (``ChannelPolicy/OlderContentStates/oldest``);
    /// nil: the current one.
    public var channelContentVersion: Int?
    /// The APNs environment the broadcast channel lives in: a device of the other
    /// environment never hears it (a development build on a production channel).
    public var channelEnvironment: APNsEnvironment

    /// Creates a token snapshot.
    public init(
        updateTokens: [String] = [], pushToStartTokens: [String] = [], sandboxTokens: Set<String> = [],
        channelID: String? = nil, audience: [String] = [], osVersions: [String: String] = [:],
        locales: [String: String] = [:], contentVersions: [String: Int] = [:], channelContentVersion: Int? = nil,
        channelEnvironment: APNsEnvironment = .production
    ) {
        self.locales = locales
        self.contentVersions = contentVersions
        self.channelContentVersion = channelContentVersion
        self.updateTokens = updateTokens
        self.pushToStartTokens = pushToStartTokens
        self.sandboxTokens = sandboxTokens
        self.channelID = channelID
        self.audience = audience
        self.osVersions = osVersions
        self.channelEnvironment = channelEnvironment
    }

    /// The APNs environment of `token` (lower-case hex).
    public func environment(of token: String) -> APNsEnvironment {
        sandboxTokens.contains(token) ? .sandbox : .production
    }
}
