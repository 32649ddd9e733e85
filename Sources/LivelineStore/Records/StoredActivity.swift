import LivelineCore

// Tests: none needed (declarations only)

/// What the store holds for one activity, as the translator loads it: the row, the tokens of
/// its devices and its user's preferences. The translator maps it onto core's
/// `ActivitySnapshot` and `TokenSnapshot`, which carry no storage detail.
public struct StoredActivity: Sendable, Hashable {
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
