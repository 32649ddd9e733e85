import Foundation

// Tests: Tests/LivelineStoreTests/RetentionConformanceTests.swift

/// How far back the store keeps each kind of row (``ActivityStore/prune(_:limit:)``): what is
/// older goes. Nothing live is ever older than its cutoff.
public struct RetentionCutoffs: Sendable, Hashable {
    /// Trace lines written before this.
    public var traceBefore: Date
    /// Activities that ended before this, or started (or had their last event, if they never
    /// started) before it without ending: with their update tokens, budget counters, late
    /// starts and the records of their deleted channels. A channel still live at APNs stays
    /// for the channel sweeper.
    public var activitiesBefore: Date
    /// Push-to-start tokens last registered before this: the app did not launch since.
    public var pushToStartTokensBefore: Date
    /// Dead letters that last failed before this.
    public var deadLettersBefore: Date
    /// Follows made before this by users with no push-to-start token left: nobody to start.
    public var followsBefore: Date
    /// Audit entries of on-call actions recorded before this.
    public var auditBefore: Date
    /// Ids of events taken over HTTPS before this: a retry after it publishes the event again.
    public var eventClaimsBefore: Date

    public init(
        traceBefore: Date, activitiesBefore: Date, pushToStartTokensBefore: Date, deadLettersBefore: Date, followsBefore: Date,
        auditBefore: Date = .distantPast, eventClaimsBefore: Date = .distantPast
    ) {
        self.eventClaimsBefore = eventClaimsBefore
        self.auditBefore = auditBefore
        self.traceBefore = traceBefore
        self.activitiesBefore = activitiesBefore
        self.pushToStartTokensBefore = pushToStartTokensBefore
        self.deadLettersBefore = deadLettersBefore
        self.followsBefore = followsBefore
    }
}

/// What one prune removed, by kind.
public struct PruneCounts: Sendable, Hashable {
    public var traceLines = 0
    public var activities = 0
    public var updateTokens = 0
    public var channels = 0
    public var pushToStartTokens = 0
    public var deadLetters = 0
    public var follows = 0
    public var auditEntries = 0
    public var eventClaims = 0
    public var eventOutcomes = 0

    public init() {}

    /// Each kind's count under its metric and log name.
    public var byKind: [(kind: String, count: Int)] {
        [
            ("trace-lines", traceLines), ("activities", activities), ("update-tokens", updateTokens), ("channels", channels),
            ("push-to-start-tokens", pushToStartTokens), ("dead-letters", deadLetters), ("follows", follows),
            ("audit-entries", auditEntries), ("event-ids", eventClaims), ("event-outcomes", eventOutcomes),
        ]
    }

    public var total: Int { byKind.reduce(0) { $0 + $1.count } }

    public static func += (left: inout PruneCounts, right: PruneCounts) {
        left.traceLines += right.traceLines
        left.activities += right.activities
        left.updateTokens += right.updateTokens
        left.channels += right.channels
        left.pushToStartTokens += right.pushToStartTokens
        left.deadLetters += right.deadLetters
        left.follows += right.follows
        left.auditEntries += right.auditEntries
        left.eventClaims += right.eventClaims
        left.eventOutcomes += right.eventOutcomes
    }
}
