// Tests: Tests/LivelineAPNsTests/BroadcastTests.swift

/// Whether APNs keeps the latest broadcast for devices that are offline (`message-storage-policy`).
public enum APNsMessageStoragePolicy: Int, Sendable, Hashable, Codable {
    /// 0: no storage; offline devices miss the push.
    case noMessageStored = 0
    /// 1: APNs stores the most recent push for offline devices.
    case mostRecentMessageStored = 1
}

/// A channel's configuration as returned by the read-channel request.
public struct APNsChannelConfiguration: Sendable, Hashable {
    /// The channel id.
    public let channelID: String
    /// Its storage policy.
    public let storagePolicy: APNsMessageStoragePolicy
    /// The push type the channel carries (`LiveActivity`).
    public let pushType: String

    public init(channelID: String, storagePolicy: APNsMessageStoragePolicy, pushType: String) {
        self.channelID = channelID
        self.storagePolicy = storagePolicy
        self.pushType = pushType
    }
}
