// Tests: none needed (declarations only)

/// AMQP header names the sender reads and writes.
public enum SenderHeaders {
    /// How many sends were attempted before this delivery (absent = 0). Written on every
    /// retry so the next consumer knows which tier comes next.
    public static let attempt = "x-liveline-attempt"
    /// Unix ms of the first attempt, so a dead letter reports the whole retry history.
    public static let firstAttemptAt = "x-liveline-first-attempt-at"
    /// Dead letters: the canonical ``LivelineCore/DeadLetterReason`` string.
    public static let reason = "x-liveline-reason"
    /// Dead letters: the job's domain.
    public static let domain = "x-liveline-domain"
    /// Dead letters: the job's activity id; on a job, its lane when it has no ``lane``.
    public static let activity = "x-liveline-activity"
    /// A job's lane (``TranslatorHeaders/lane``).
    public static let lane = "x-liveline-lane"
}
