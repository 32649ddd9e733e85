// Tests: Tests/LivelineCoreTests/LifecycleTests.swift

/// The rules that keep pushes in order and inside an activity's life, before any
/// payload is built.
public enum LifecycleGuard {
    /// iOS ends an activity 8 hours after it started.
    public static let lifetimeSeconds: Int64 = 8 * 3_600
    /// iOS removes an ended activity at most 4 hours after the end.
    static let maxDismissalSeconds: Int64 = 4 * 3_600

    /// Drops an event that repeats, precedes, or follows the end of what was applied.
    static func orderingDrop(event: DomainEvent, activity: ActivitySnapshot?) -> (DropReason, String)? {
        guard let activity else { return nil }
        if activity.lastEventId == event.id {
            return (.duplicate, "event \(event.id) was already applied")
        }
        if let last = activity.lastEventTime, event.time <= last {
            return (.stale, "event time \(event.time) is not newer than the last applied \(last)")
        }
        if let endedAt = activity.endedAt {
            return (.afterEnd, "activity ended at \(endedAt) (\(activity.endReason ?? "ended")); a push now would revive it")
        }
        return nil
    }

    /// Whether iOS has already ended the activity for age, judged at the later of
    /// the event time and now (a backlog processed late is still too late).
    static func isPastLifetime(startedAt: EventTime, event: DomainEvent, now: EventTime) -> Bool {
        max(now, event.time) > startedAt.adding(seconds: lifetimeSeconds)
    }

    /// The `dismissal-date` for an end at `endSeconds`, or nil for the default.
    static func dismissalDate(_ policy: DismissalPolicy, endSeconds: Int64) -> Int64? {
        switch policy {
        case .default:
            return nil
        case .immediate:
            // A date in the past dismisses at once; the end time minus one second is
            // deterministic (same bytes on redelivery) and reads well in traces.
            return endSeconds - 1
        case .after(let seconds):
            return endSeconds + min(max(seconds, 0), maxDismissalSeconds)
        }
    }
}
