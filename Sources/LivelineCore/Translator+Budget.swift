// Tests: Tests/LivelineCoreTests/BudgetTests.swift, Tests/LivelineServicesTests/GamePipelineTests.swift

extension Translator {
    /// Spends the budget for a priority-10 push and adjusts its style; fails with an
    /// `over-budget` rejection past the hard cap.
    ///
    /// Starts and ends happen once per activity and must arrive: they are counted
    /// but never downgraded or dead-lettered.
    static func spendBudget(
        _ budget: BudgetUsage, style: inout PushStyle, pushEvent: PushEvent, event: DomainEvent,
        configuration: DomainConfiguration, preferences: UserPreferences, now: EventTime, notes: inout [String]
    ) -> Result<BudgetUsage, TranslationDecision.Rejection> {
        guard style.priority == .high else { return .success(budget) }
        let spent = BudgetDecision.spend(
            budget, policy: configuration.policy.budget,
            frequentPushesEnabled: preferences.frequentPushesEnabled, now: now
        )
        switch (spent, pushEvent) {
        case (.allow(let usage), _), (.downgrade(let usage), .start), (.downgrade(let usage), .end),
             (.overCap(let usage), .start), (.overCap(let usage), .end):
            return .success(usage)
        case (.downgrade(let usage), .update):
            style.priority = .low
            if style.alert != nil { notes.append("alert dropped with the downgrade") }
            style.alert = nil
            notes.append("over the priority-10 budget (\(usage.priority10Count) this hour): downgraded to 5")
            return .success(usage)
        case (.overCap(let usage), .update):
            let message = "\(usage.priority10Count) priority-10 updates this hour for activity \(event.activityId), past the hard cap"
            return .failure(.init(reason: .overBudget, message: message, traceNotes: notes))
        }
    }
}
