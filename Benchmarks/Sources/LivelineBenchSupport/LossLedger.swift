/// The loss ledger: every event the broker confirmed, matched one by one against what
/// reached APNs, what sits in the dead-letter queue, and what the translator dropped by a
/// documented rule. An event with none of the three is lost. A drop counts as legitimate
/// only where its rule holds in what the ledger saw: an event dropped as superseded or
/// stale needs a later event of its activity accounted for (delivered, or itself in the
/// dead-letter queue where on-call sees it); one dropped after the end needs the
/// activity's end delivered before it; one dropped for want of a target needs APNs to have
/// said, for an earlier event, that the device is gone (410, the token deleted).
///
/// Duplicates (one event's push reaching a device twice) are allowed after a crash or a
/// lost ack, but only up to `duplicateBound`, which the caller derives from the prefetch
/// and in-flight windows of the workers it disturbed.
public struct LossLedger: Sendable {
    /// One event as published and confirmed.
    public struct Event: Sendable, Hashable {
        public var id: String
        public var activity: String
        /// Its place in the activity's stream (0, 1, 2...): later events supersede earlier ones.
        public var sequence: Int
        /// The activity's end: events after it are dropped by rule.
        public var isEnd: Bool

        public init(id: String, activity: String, sequence: Int, isEnd: Bool = false) {
            self.id = id
            self.activity = activity
            self.sequence = sequence
            self.isEnd = isEnd
        }
    }

    /// The translator's drop reasons the ledger can check (`DropReason` raw values, and
    /// `superseded` for coalescing in a batch).
    public enum Rule: String, Sendable, CaseIterable {
        case superseded, stale, duplicate, afterEnd, noTarget
    }

    public var events: [Event]
    /// Pushes received per event id (one device per event; more than one is a duplicate).
    public var deliveries: [String: Int] = [:]
    /// Pushes the simulator received that match no published event.
    public var unexpectedDeliveries = 0
    /// Dead letters per event id, with their reason.
    public var deadLetters: [String: String] = [:]
    /// The translator's drops per event id, with their reason.
    public var drops: [String: String] = [:]
    /// Events APNs answered that the device is gone (410 Unregistered), so the sender
    /// deleted its token: a final answer, not a loss.
    public var rejections: [String: String] = [:]
    public var duplicateBound: Int

    public init(events: [Event], duplicateBound: Int) {
        self.events = events
        self.duplicateBound = duplicateBound
    }

    /// What became of each event, and whether that is allowed.
    public func verdict() -> Verdict {
        var verdict = Verdict(published: events.count, duplicateBound: duplicateBound)
        verdict.unexpected = unexpectedDeliveries
        let byActivity = Dictionary(grouping: events, by: \.activity)
        for event in events {
            let pushes = deliveries[event.id, default: 0]
            if pushes > 0 {
                verdict.delivered += 1
                verdict.duplicates += pushes - 1
            } else if let reason = rejections[event.id] {
                verdict.rejected[reason, default: 0] += 1
            } else if let reason = deadLetters[event.id] {
                verdict.deadLettered[reason, default: 0] += 1
            } else if let reason = drops[event.id] {
                verdict.dropped[reason, default: 0] += 1
                if !justified(event, reason: reason, activity: byActivity[event.activity] ?? []) {
                    verdict.unjustifiedDrops.append("\(event.id) (\(reason))")
                }
            } else {
                verdict.lost.append(event.id)
            }
        }
        return verdict
    }

    private func justified(_ event: Event, reason: String, activity: [Event]) -> Bool {
        let delivered = { (other: Event) in deliveries[other.id, default: 0] > 0 }
        let final = { (other: Event) in delivered(other) || deadLetters[other.id] != nil || rejections[other.id] != nil }
        switch Rule(rawValue: reason) {
        case .superseded, .stale, .duplicate:
            return activity.contains { $0.sequence > event.sequence && final($0) }
        case .afterEnd:
            return activity.contains { $0.isEnd && $0.sequence < event.sequence && delivered($0) }
        case .noTarget:
            return activity.contains { $0.sequence < event.sequence && rejections[$0.id] != nil }
        case nil:
            return false
        }
    }
}

/// The ledger's findings.
public struct Verdict: Sendable, Codable, Equatable {
    public var published: Int
    public var delivered = 0
    public var duplicates = 0
    public var duplicateBound: Int
    /// Event ids with no push, no dead letter and no drop.
    public var lost: [String] = []
    public var deadLettered: [String: Int] = [:]
    /// Answered by APNs that the device is gone, by reason.
    public var rejected: [String: Int] = [:]
    public var dropped: [String: Int] = [:]
    /// Drops whose rule does not hold in what was seen: `id (reason)`.
    public var unjustifiedDrops: [String] = []
    public var unexpected = 0

    public init(published: Int, duplicateBound: Int) {
        self.published = published
        self.duplicateBound = duplicateBound
    }

    public var passed: Bool {
        lost.isEmpty && unjustifiedDrops.isEmpty && duplicates <= duplicateBound && unexpected == 0
    }

    public var text: String {
        func list(_ counts: [String: Int]) -> String {
            counts.isEmpty ? "none" : counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        }
        func examples(_ ids: [String]) -> String {
            ids.isEmpty ? "" : " (" + ids.prefix(5).joined(separator: ", ") + (ids.count > 5 ? ", ..." : "") + ")"
        }
        return [
            "ledger: \(published) published and confirmed",
            "  delivered      \(delivered)",
            "  dead-lettered  \(deadLettered.values.reduce(0, +)): \(list(deadLettered))",
            "  device gone    \(rejected.values.reduce(0, +)): \(list(rejected))",
            "  dropped        \(dropped.values.reduce(0, +)): \(list(dropped)); unjustified \(unjustifiedDrops.count)"
                + examples(unjustifiedDrops),
            "  duplicated     \(duplicates) (bound \(duplicateBound))",
            "  unexpected     \(unexpected) push(es) matching no published event",
            "  lost           \(lost.count)" + examples(lost),
            passed ? "ledger: PASS" : "ledger: FAIL",
        ].joined(separator: "\n")
    }
}
