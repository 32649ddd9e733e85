// Tests: Tests/LivelineAPITests/LimitTests.swift

/// What one caller may ask of the api: how often, and how much it may keep.
///
/// Request limits are token buckets: a user may spend `userRequestsPerMinute` at once and
/// gets them back over a minute; the app (every user together) `appRequestsPerSecond` over
/// a second. The stored limits bound what one account can make every later push cost: each
/// device with a push-to-start token is a push at every start, each follow a row read at
/// every start of a game.
public struct APILimits: Sendable, Hashable {
    /// `liveline.api.limits.user-requests-per-minute`.
    public var userRequestsPerMinute: Int
    /// `liveline.api.limits.app-requests-per-second`.
    public var appRequestsPerSecond: Int
    /// `liveline.api.limits.devices-per-user`: devices with a push-to-start token.
    public var devicesPerUser: Int
    /// `liveline.api.limits.follows-per-user`.
    public var followsPerUser: Int

    public init(userRequestsPerMinute: Int = 120, appRequestsPerSecond: Int = 1_000, devicesPerUser: Int = 20, followsPerUser: Int = 500) {
        self.userRequestsPerMinute = userRequestsPerMinute
        self.appRequestsPerSecond = appRequestsPerSecond
        self.devicesPerUser = devicesPerUser
        self.followsPerUser = followsPerUser
    }
}
