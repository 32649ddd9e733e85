// Tests: Tests/LivelineCoreTests/BudgetTests.swift

/// The outcome of spending one priority-10 demand from a ``BudgetUsage``.
public enum BudgetDecision: Hashable, Sendable {
    /// Within budget: send at priority 10.
    case allow(BudgetUsage)
    /// Over budget: send at priority 5 without the alert (a late alert misleads
    /// more than none, and the content-state still carries the change).
    case downgrade(BudgetUsage)
    /// Past the hard cap: dead-letter `over-budget`.
    case overCap(BudgetUsage)

    /// Spends one demand at `now`. The window is a fixed hour from its first demand,
    /// then starts again at the next demand.
    public static func spend(_ usage: BudgetUsage, policy: BudgetPolicy, frequentPushesEnabled: Bool, now: EventTime) -> BudgetDecision {
        var next = usage
        if let start = usage.windowStart, now < start.adding(seconds: 3_600), now >= start {
            // Saturating: a corrupt stored count must not trap.
            next.priority10Count = min(usage.priority10Count, Int.max - 1) + 1
        } else {
            next = BudgetUsage(priority10Count: 1, windowStart: now)
        }
        let limit = frequentPushesEnabled ? policy.priority10PerHourFrequent : policy.priority10PerHour
        let cap = frequentPushesEnabled ? policy.hardCapPerHourFrequent : policy.hardCapPerHour
        if next.priority10Count > max(cap, limit) { return .overCap(next) }
        if next.priority10Count > limit { return .downgrade(next) }
        return .allow(next)
    }
}
