// Tests: none needed (declarations only)

/// What happened to an update-token registration.
public enum TokenRegistrationOutcome: Sendable, Hashable {
    /// The device had no token for the activity; `createdActivity` tells whether a pending row was made.
    case created(createdActivity: Bool)
    /// The device's previous token was replaced (rotation) or re-registered.
    case replaced
    /// The activity belongs to another user; nothing was stored.
    case ownedByAnotherUser
    /// The activity has ended; a token for it would never be used.
    case activityEnded
}
