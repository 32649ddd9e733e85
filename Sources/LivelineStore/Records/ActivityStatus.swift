// Tests: none needed (declarations only)

/// Where an activity is in its life, as far as the store knows.
public enum ActivityStatus: String, Sendable, Hashable, Codable {
    /// An app registered a token before the first event arrived: the row only says who owns it.
    case pending
    /// At least one event was applied and the activity has not ended.
    case active
    /// An end was applied; nothing more is sent for it.
    case ended
}
