// Tests: none needed (declarations only)

/// The ActivityKit `aps.event` of a push.
public enum PushEvent: String, Codable, Hashable, Sendable {
    /// Remotely starts an activity (push-to-start token, iOS 17.2+).
    case start
    /// Replaces the content-state of a running activity.
    case update
    /// Ends the activity with a final content-state.
    case end
}
