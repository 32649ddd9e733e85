// Tests: none needed (declarations only)

/// What the user's device reported about Live Activity authorization.
public struct UserPreferences: Codable, Hashable, Sendable {
    /// `ActivityAuthorizationInfo.areActivitiesEnabled`.
    public var activitiesEnabled: Bool
    /// `ActivityAuthorizationInfo.frequentPushesEnabled`: a larger budget applies.
    public var frequentPushesEnabled: Bool

    /// The preferences of a user who never set any.
    public static let defaults = UserPreferences()

    /// Creates preferences; by default activities are enabled, frequent pushes not.
    public init(activitiesEnabled: Bool = true, frequentPushesEnabled: Bool = false) {
        self.activitiesEnabled = activitiesEnabled
        self.frequentPushesEnabled = frequentPushesEnabled
    }
}
