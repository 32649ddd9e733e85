// Tests: Tests/LivelineStoreTests/ChangeConformanceTests.swift

/// What the store did with one ``ActivityChange``.
public enum ChangeOutcome: String, Sendable, Hashable {
    /// Stored: the translator should push it.
    case applied
    /// Its event time was not newer than the last applied one (a duplicate or a late event).
    case stale
    /// The activity had already ended; a later push would bring a dismissed activity back.
    case ended
    /// Its event is the one stored: an earlier attempt applied it, and may have died before
    /// its push reached the broker (a translator cut off from the broker while another took
    /// its messages). The translator publishes the push again and stores nothing.
    case alreadyApplied
}

/// What an activity's row holds when a change did not apply to it.
struct StoredEvent {
    var ended: Bool
    var eventID: String?

    /// Why `change` did not apply. The stored event being the change's own comes first: an
    /// end applied by an earlier attempt is that attempt's, not a later event's.
    func outcome(missing change: ActivityChange) -> ChangeOutcome {
        if let eventID, eventID == change.eventID { return .alreadyApplied }
        return ended ? .ended : .stale
    }
}
