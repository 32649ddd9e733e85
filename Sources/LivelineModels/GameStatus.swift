// Tests: none needed (declarations only)

/// The state of a game. The raw values are the exact strings in `content-state`.
///
/// `final`, `postponed` and `cancelled` are terminal: the server ends the activity.
public enum GameStatus: String, Codable, Hashable, Sendable, CaseIterable {
    case scheduled
    case live
    case halftime
    /// A break other than halftime (between periods, overtime break, delay).
    case intermission
    case final
    case postponed
    case cancelled
}
