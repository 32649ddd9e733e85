import Foundation
import LivelineModels

/// The token that lets the server start an activity of one attributes type for one user.
///
/// APNs invalidates it once used, so `usedAt` marks it spent until the app registers a new one.
public struct PushToStartToken: Sendable, Hashable, Codable {
    public var userID: String
    public var attributesType: String
    /// Lower-case hex.
    public var token: String
    public var registeredAt: Date
    /// When a start push was sent with it; `nil` while it is still usable.
    public var usedAt: Date?
    /// Which APNs host accepts the token.
    public var environment: APNsEnvironment

    public init(
        userID: String, attributesType: String, token: String, registeredAt: Date, usedAt: Date? = nil,
        environment: APNsEnvironment = .production
    ) {
        self.userID = userID
        self.attributesType = attributesType
        self.token = token
        self.registeredAt = registeredAt
        self.usedAt = usedAt
        self.environment = environment
    }

    /// Whether a start push may still be sent with it.
    public var isUsable: Bool { usedAt == nil }
}
