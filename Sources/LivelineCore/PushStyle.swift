// Tests: Tests/LivelineCoreTests/PushJobTests.swift, Tests/LivelineCoreTests/OverrideTests.swift, Tests/LivelineCoreTests/GoldenPayloadTests.swift

/// How loud one push is: priority, alert, relevance, freshness. Chosen from the
/// domain policy by what changed.
struct PushStyle: Hashable, Sendable {
    var priority: PushPriority
    var alert: AlertTemplate?
    var relevanceScore: Double?
    var staleAfterSeconds: Int64?
    var note: String

    /// The style of a push for `event` given what was applied before.
    static func choose(
        for pushEvent: PushEvent, event: DomainEvent, previous: ActivitySnapshot?, policy: DomainPolicy
    ) -> PushStyle {
        let status = policy.policy(for: event.status)
        let relevance = status.relevanceScore ?? policy.relevanceScore
        let stale = status.staleAfterSeconds ?? policy.staleAfterSeconds
        switch pushEvent {
        case .start:
            // `alert` is required on start; a status alert (e.g. the driver already
            // arrived) says more than the generic start alert.
            return PushStyle(
                priority: .high, alert: status.alert ?? policy.pushToStartAlert,
                relevanceScore: relevance, staleAfterSeconds: stale, note: "start for status \(event.status)"
            )
        case .end:
            return PushStyle(
                priority: status.priority, alert: status.alert, relevanceScore: relevance,
                staleAfterSeconds: nil, note: "end for terminal status \(event.status)"
            )
        case .update:
            let entering = previous?.lastStatus != event.status
            var style = entering
                ? PushStyle(priority: status.priority, alert: status.alert, relevanceScore: relevance,
                            staleAfterSeconds: stale, note: "entered status \(event.status)")
                : PushStyle(priority: policy.routinePriority, alert: nil, relevanceScore: relevance,
                            staleAfterSeconds: stale, note: "routine update in status \(event.status)")
            // A change rule is the more specific news (a goal in the same push that
            // first shows the game live), so its alert wins when it fires.
            if let previousState = previous?.lastContentState,
               let rule = policy.changeRules.first(where: { rule in
                   rule.fields.contains { previousState[$0] != event.contentState[$0] }
               }) {
                style.priority = max(style.priority, rule.priority)
                style.alert = rule.alert ?? style.alert
                style.relevanceScore = rule.relevanceScore ?? style.relevanceScore
                style.note += "; change rule \(rule.name) fired"
            }
            return style
        }
    }
}

extension PushStyle {
    /// The producer's overrides, already checked against the domain's bounds.
    mutating func apply(_ overrides: EventOverrides, eventTime: EventTime) {
        if let priority = overrides.priority { self.priority = priority }
        if let alert = overrides.alert { self.alert = alert }
        if let score = overrides.relevanceScore { relevanceScore = score }
        if let staleDate = overrides.staleDate { staleAfterSeconds = staleDate.unixSeconds - eventTime.unixSeconds }
    }
}
