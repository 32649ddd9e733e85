import LivelineCore

// Tests: Tests/LivelineServicesTests/SenderDecisionTests.swift

/// The checks before a send: a job that is no longer worth sending is dropped and
/// counted, never sent.
public enum SendGate: Hashable, Sendable {
    /// Send it.
    case send
    /// Its stale date passed: the device would show it as outdated anyway.
    case expired
    /// A newer event for the activity was already applied (this update, back from a retry
    /// tier, would only roll the activity back), or a newer job for the same target is queued behind it (a
    /// backlog: sending both would spend a push, and maybe budget, on a state the device
    /// shows for milliseconds), or had its turn before it (this one reached the queue late).
    case superseded

    /// Why it was dropped, for metrics and traces.
    public var dropReason: String? {
        switch self {
        case .send: nil
        case .expired: "expired"
        case .superseded: "superseded"
        }
    }

    /// Decides for one job.
    ///
    /// Only updates are dropped: an end must arrive whatever its age (otherwise the
    /// activity stays on screen), and a start has no earlier state to be stale against.
    ///
    /// - Parameters:
    ///   - nowMilliseconds: the current Unix time in ms.
    ///   - returning: the job comes back from a retry tier: a retry, or a deferral while
    ///     its device backed off after a 429. Only then is it checked against the activity's
    ///     last applied event: a first send is as new as the translator made it, but a job
    ///     that waited in a tier may have been overtaken by newer ones sent meanwhile.
    ///   - lastAppliedMilliseconds: the activity's last applied event time in Unix ms,
    ///     when known (only looked up for a returning job).
    ///   - overtaken: a newer job of the same target waits behind this one in the sender
    ///     (``PushJob/supersedes(_:)``), or had its turn before it; on a first send as on a retry.
    public static func decide(
        _ job: PushJob, nowMilliseconds: Int64, returning: Bool, lastAppliedMilliseconds: Int64?,
        overtaken: Overtaking? = nil
    ) -> SendGate {
        guard job.event == .update else { return .send }
        // 0 is "deliver now, never store" (a broadcast on a channel that stores nothing), not a date.
        if let expiration = job.expiration, expiration > 0, expiration * 1000 <= nowMilliseconds { return .expired }
        if overtaken != nil { return .superseded }
        if returning, let lastApplied = lastAppliedMilliseconds, lastApplied > job.sequence { return .superseded }
        return .send
    }

    /// Whether ``decide(_:nowMilliseconds:returning:lastAppliedMilliseconds:overtaken:)``
    /// needs the activity's last applied time, so the store is read only when it matters.
    public static func needsLastApplied(_ job: PushJob, returning: Bool) -> Bool {
        job.event == .update && returning
    }
}

/// A newer job of the same lane that a job's turn found (``ActivityLanes``).
public enum Overtaking: Hashable, Sendable {
    /// Queued behind it in this sender.
    case queued
    /// Had its turn in this sender before it: the older one reached the queue late.
    case sent
}
