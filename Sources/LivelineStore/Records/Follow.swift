import Foundation

// Tests: none needed (declarations only)

/// A user following a topic: a team, a league or one game. A game's start event names its
/// topics, and every device of every follower gets a push-to-start.
public struct Follow: Sendable, Hashable, Codable {
    public var topic: String
    public var followedAt: Date

    public init(topic: String, followedAt: Date) {
        self.topic = topic
        self.followedAt = followedAt
    }
}
