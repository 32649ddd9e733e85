// Tests: none needed (declarations only)

/// What the translator decided for one event. The service acts on it: publish the
/// jobs, store the snapshot, or dead-letter.
public enum TranslationDecision: Hashable, Sendable {
    /// Publish these jobs, then store the new snapshot and budget.
    case send(Send)
    /// Publish nothing. Store `newSnapshot` when present (the state was applied).
    case drop(Drop)
    /// Dead-letter the event; store nothing.
    case deadLetter(Rejection)

    /// Jobs to publish.
    public struct Send: Hashable, Sendable {
        /// One job per target, all with the same payload bytes but where a shared start's
        /// channel, an alert's language or the content-state version differs.
        public var jobs: [PushJob]
        /// The activity after this event.
        public var newSnapshot: ActivitySnapshot
        /// The budget after this event.
        public var newBudget: BudgetUsage
        /// Why each choice was made, for `liveline trace`.
        public var traceNotes: [String]
        /// The push wanted priority 10 and goes at 5: over its activity's budget.
        public var downgraded = false
        /// How the jobs' alert is given; nil when they carry none.
        public var alertForm: AlertForm? = nil
        /// The jobs by the content-state version their payload carries.
        public var jobsByVersion: [Int: Int] = [:]
        /// Devices left out because their app's content-state version cannot show this state.
        public var incompatible = 0
    }

    /// Nothing to publish.
    public struct Drop: Hashable, Sendable {
        /// Why.
        public var reason: DropReason
        /// A human explanation.
        public var message: String
        /// The activity with the event applied, when the state should still be
        /// stored (`noTarget`, `activitiesDisabled`, `pastLifetime`, `incompatibleVersion`); nil otherwise.
        public var newSnapshot: ActivitySnapshot?
        /// Why each choice was made.
        public var traceNotes: [String]
    }

    /// The event cannot be delivered.
    public struct Rejection: Error, Hashable, Sendable {
        /// The canonical reason.
        public var reason: DeadLetterReason
        /// A human explanation.
        public var message: String
        /// Why each choice was made.
        public var traceNotes: [String]
    }
}
