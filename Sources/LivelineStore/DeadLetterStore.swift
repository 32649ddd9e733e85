import Foundation

// Tests: none needed (declarations only)

/// The on-call view of the dead-letter queue: letters the keeper moved out of
/// `liveline.dead`, filtered, replayed and purged without touching the queue.
///
/// Both stores keep letters in one `dead_letters` table indexed by time, reason, domain and
/// activity, so a filter over a million letters answers in well under a second.
public protocol DeadLetterStore: Sendable {
    /// Stores letters in one transaction; a letter whose id is already stored is left as it
    /// is, so a redelivered message (the keeper died before its ack) is kept once.
    ///
    /// - Returns: how many were new.
    func keepDeadLetters(_ letters: [DeadLetterRecord]) async throws -> Int

    /// The newest `limit` letters matching `filter`, newest first.
    func deadLetters(matching filter: DeadLetterFilter, limit: Int) async throws -> [DeadLetterRecord]

    /// How many letters match `filter`, per reason.
    func deadLetterCounts(matching filter: DeadLetterFilter) async throws -> [String: Int]

    /// One letter by id.
    func deadLetter(id: String) async throws -> DeadLetterRecord?

    /// Takes up to `limit` letters matching `filter`, oldest first, for one replay: pending
    /// ones, and also those resolved before `resolvedBefore` when it is given (a forced
    /// replay: the date keeps it from taking back what it resolved itself), but none that a
    /// replay claimed less than `lease` ago. Two replays at once never get the same letter;
    /// a crashed replay's claims lapse after the lease.
    func claimDeadLetters(
        matching filter: DeadLetterFilter, limit: Int, claimant: String, at now: Date, lease: TimeInterval,
        resolvedBefore: Date?
    ) async throws -> [DeadLetterRecord]

    /// Records what a replay did with letters it claimed (`replayed`, `skipped: …`), and
    /// releases them; a `nil` outcome only releases the claim.
    func resolveDeadLetters(_ outcomes: [(id: String, outcome: String?)], claimant: String, at now: Date) async throws

    /// Deletes the letters matching `filter`.
    ///
    /// - Returns: how many were deleted.
    func purgeDeadLetters(matching filter: DeadLetterFilter) async throws -> Int

    /// An activity's trace lines after `sequence`, oldest first, at most `limit`.
    func traceLines(activityID: String, after sequence: Int64, limit: Int) async throws -> [TraceLine]

    /// The newest `limit` lines of an activity's trace that match `filter`, oldest first, and
    /// how many match in all, read at one moment. Newest is by time, then by sequence: the
    /// `(activity_id, at_ms)` index then walks back from the end and stops after `limit`
    /// matches, so a game with 100,000 lines answers as fast as a ride.
    func traceTail(activityID: String, matching filter: TraceFilter, limit: Int) async throws -> TraceTail
}
