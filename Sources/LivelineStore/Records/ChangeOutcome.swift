/// What the store did with one ``ActivityChange``.
public enum ChangeOutcome: String, Sendable, Hashable {
    /// Stored: the translator should push it.
    case applied
    /// Its event time was not newer than the last applied one (a duplicate or a late event).
    case stale
    /// The activity had already ended; a later push would bring a dismissed activity back.
    case ended
}
