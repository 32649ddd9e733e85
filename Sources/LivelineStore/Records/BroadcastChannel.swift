import Foundation

// Tests: none needed (declarations only)

/// An APNs broadcast channel that delivers one (domain, key), such as one game's score.
public struct BroadcastChannel: Sendable, Hashable, Codable {
    public var domain: String
    public var key: String
    /// The base64 channel id APNs returned on creation.
    public var channelID: String
    public var createdAt: Date
    /// Set once the channel was deleted at APNs; a deleted channel is not served to apps.
    public var deletedAt: Date?

    public init(domain: String, key: String, channelID: String, createdAt: Date, deletedAt: Date? = nil) {
        self.domain = domain
        self.key = key
        self.channelID = channelID
        self.createdAt = createdAt
        self.deletedAt = deletedAt
    }
}
