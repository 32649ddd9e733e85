/// Everything the translator needs to decide the push for one activity.
public struct ActivitySnapshot: Sendable, Hashable {
    /// `nil` when no row exists yet (the first event of an activity no app registered for).
    public var activity: ActivityRecord?
    /// The update tokens of the activity, one per device, ordered by device id.
    ///
    /// Empty when the row is pending and owned by someone other than the requested user:
    /// those tokens were registered by another user and are purged when the event applies.
    public var updateTokens: [UpdateToken]
    /// The user's push-to-start tokens for the attributes type, one per device, used or
    /// not, ordered by device id.
    public var pushToStartTokens: [PushToStartToken]
    /// The user's preferences, ``UserPreferences/defaults`` if never set.
    public var preferences: UserPreferences

    public init(
        activity: ActivityRecord?, updateTokens: [UpdateToken],
        pushToStartTokens: [PushToStartToken], preferences: UserPreferences
    ) {
        self.activity = activity
        self.updateTokens = updateTokens
        self.pushToStartTokens = pushToStartTokens
        self.preferences = preferences
    }
}
