/// What a user allowed in the app's settings.
public struct UserPreferences: Sendable, Hashable, Codable {
    /// Mirrors `ActivityAuthorizationInfo.areActivitiesEnabled`.
    public var activitiesEnabled: Bool
    /// Mirrors `frequentPushesEnabled`; a larger priority-10 budget applies when true.
    public var frequentPushesEnabled: Bool

    /// The preferences of a user who never set any.
    public static let defaults = UserPreferences(activitiesEnabled: true, frequentPushesEnabled: false)

    public init(activitiesEnabled: Bool, frequentPushesEnabled: Bool) {
        self.activitiesEnabled = activitiesEnabled
        self.frequentPushesEnabled = frequentPushesEnabled
    }
}
