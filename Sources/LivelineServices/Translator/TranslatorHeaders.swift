// Tests: none needed (declarations only)

/// The AMQP headers the translator sets, so on-call tools and the sender can filter
/// without decoding bodies.
public enum TranslatorHeaders {
    /// The dead-letter reason (canonical string, e.g. `invalid-event`).
    public static let reason = "x-liveline-reason"
    /// The domain, when known.
    public static let domain = "x-liveline-domain"
    /// The activity id, when known.
    public static let activity = "x-liveline-activity"
    /// A job's lane in the sender: its activity and target (``LivelineCore/PushTarget/laneKey``).
    /// Jobs of one lane are sent in queue order; other lanes run beside them.
    public static let lane = "x-liveline-lane"
    /// On a ``LivelineCore/PushJobBundle``: how many jobs it carries (for people and tools; the
    /// sender reads the lines).
    public static let jobs = "x-liveline-jobs"
    /// A job's sequence (event time in Unix ms).
    public static let sequence = "x-liveline-sequence"
    /// A job's ActivityKit event (`update`, `end`, `start`).
    public static let event = "x-liveline-event"
    /// When the translator published the job, in Unix ms: the sender's queue wait starts here.
    public static let publishedAt = "x-liveline-published-at"
    /// On an event: the highest `apns-priority` its pushes may have (5). Set by
    /// `liveline dlq replay` on `over-budget` letters, so they go out without spending budget.
    public static let priorityCap = "x-liveline-priority-cap"
}
