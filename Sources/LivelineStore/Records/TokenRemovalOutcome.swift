// Tests: none needed (declarations only)

/// What happened to an app's request to remove an update token.
public enum TokenRemovalOutcome: Sendable, Hashable {
    case removed
    /// The device had no token for the activity (or the activity does not exist).
    case notFound
    /// The activity belongs to another user; nothing was removed.
    case ownedByAnotherUser
}
