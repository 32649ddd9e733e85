// Tests: Tests/LivelineCoreTests/TargetingTests.swift, Tests/LivelineCoreTests/GenericDomainTests.swift

/// How a domain's broadcast channels behave (iOS 18 channels, DESIGN §4).
///
/// JSON keys: `storesLatestMessage` (default false), `minimumOSVersion` (default 18),
/// `olderContentStates` (default `perToken`).
public struct ChannelPolicy: Hashable, Sendable, Codable {
    /// The channel's message storage policy. With `false` (APNs' "no messages stored") a
    /// device that is offline misses the broadcast, and every broadcast goes with
    /// `apns-expiration: 0`. With `true` APNs keeps the latest message for a device that is
    /// offline, and each broadcast expires at its stale date.
    public var storesLatestMessage: Bool
    /// The oldest iOS major version that can listen to a channel. A device registered with
    /// an older one is started without `input-push-channel` and updated per token.
    public var minimumOSVersion: Int
    /// How devices whose app decodes an older content-state hear the activity.
    public var olderContentStates: OlderContentStates

    public init(storesLatestMessage: Bool = false, minimumOSVersion: Int = 18, olderContentStates: OlderContentStates = .perToken) {
        self.storesLatestMessage = storesLatestMessage
        self.minimumOSVersion = minimumOSVersion
        self.olderContentStates = olderContentStates
    }

    /// A broadcast carries one content-state for every listener.
    public enum OlderContentStates: String, Hashable, Sendable, Codable {
        /// Devices of an older version are started without `input-push-channel` and updated
        /// per token, each with its version's state; the channel carries the current one.
        case perToken
        /// Every device listens to the channel, which carries the oldest version still
        /// registered for the domain. Right when each newer app decodes the older states
        /// (the fields added since are optional), as it usually does.
        case oldest
    }

    private enum Keys: String, CodingKey { case storesLatestMessage, minimumOSVersion, olderContentStates }

    /// Decodes with the documented defaults for absent keys.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        self.init(
            storesLatestMessage: try container.decodeIfPresent(Bool.self, forKey: .storesLatestMessage) ?? false,
            minimumOSVersion: try container.decodeIfPresent(Int.self, forKey: .minimumOSVersion) ?? 18,
            olderContentStates: try container.decodeIfPresent(OlderContentStates.self, forKey: .olderContentStates) ?? .perToken)
    }

    /// Whether a device reporting `osVersion` (`18.1`; nil: unknown, taken as current) can
    /// listen to a channel.
    public func reaches(osVersion: String?) -> Bool {
        guard let osVersion, let major = Int(osVersion.prefix { $0 != "." }) else { return true }
        return major >= minimumOSVersion
    }
}
