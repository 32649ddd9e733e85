import Foundation

// Tests: none needed (declarations only)

/// A device to start into a shared activity that was already running when its user followed
/// one of the activity's topics, or registered the device: claimed by one translator, which
/// sends the start once.
public struct LateStart: Sendable, Hashable {
    public var activityID: String
    /// The device's push-to-start token for the activity's attributes type.
    public var token: PushToStartToken

    public init(activityID: String, token: PushToStartToken) {
        self.activityID = activityID
        self.token = token
    }
}
