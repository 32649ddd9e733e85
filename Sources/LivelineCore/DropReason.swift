// Tests: none needed (declarations only)

/// Why an event produced no push although nothing is wrong with it.
public enum DropReason: String, Codable, Hashable, Sendable {
    /// Older than the last applied event for the activity.
    case stale
    /// The same event again (same id, or same time as the last applied one).
    case duplicate
    /// The activity has already ended; another push would bring it back.
    case afterEnd
    /// More than 8 hours since the start: iOS has ended the activity.
    case pastLifetime
    /// The user turned Live Activities off; the state is still applied.
    case activitiesDisabled
    /// No update token, no usable push-to-start token and no channel; the state is
    /// still applied so a later token registration or reconciliation sees it.
    case noTarget
    /// Every device's app decodes an older content-state version, and none can show this
    /// state (``ContentStateVersions``); the state is still applied.
    case incompatibleVersion
}
