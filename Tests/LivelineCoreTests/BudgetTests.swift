import Foundation
import LivelineCore
import Testing

/// Priority-10 budget: downgrade, hard cap, window, frequent pushes.
@Suite("Budget")
struct BudgetTests {
    let policy = BudgetPolicy(priority10PerHour: 2, priority10PerHourFrequent: 4, hardCapPerHour: 3, hardCapPerHourFrequent: 6)
    let start = EventTime(millisecondsSince1970: 1_000_000)

    @Test func spendsThenDowngradesThenCaps() {
        var usage = BudgetUsage.empty
        var outcomes: [String] = []
        for _ in 0..<4 {
            switch BudgetDecision.spend(usage, policy: policy, frequentPushesEnabled: false, now: start) {
            case .allow(let next): usage = next; outcomes.append("allow")
            case .downgrade(let next): usage = next; outcomes.append("downgrade")
            case .overCap: outcomes.append("cap")
            }
        }
        #expect(outcomes == ["allow", "allow", "downgrade", "cap"])
        #expect(usage == BudgetUsage(priority10Count: 3, windowStart: start))
    }

    @Test func frequentPushesRaiseTheLimits() {
        let usage = BudgetUsage(priority10Count: 3, windowStart: start)
        #expect(BudgetDecision.spend(usage, policy: policy, frequentPushesEnabled: true, now: start)
            == .allow(BudgetUsage(priority10Count: 4, windowStart: start)))
        #expect(BudgetDecision.spend(usage, policy: policy, frequentPushesEnabled: false, now: start)
            == .overCap(BudgetUsage(priority10Count: 4, windowStart: start)))
    }

    @Test func windowRestartsAfterAnHour() {
        let usage = BudgetUsage(priority10Count: 50, windowStart: start)
        let later = start.adding(seconds: 3_600)
        #expect(BudgetDecision.spend(usage, policy: policy, frequentPushesEnabled: false, now: later)
            == .allow(BudgetUsage(priority10Count: 1, windowStart: later)))
        // A clock that went backwards also starts a fresh window rather than trusting it.
        let earlier = start.adding(seconds: -10)
        #expect(BudgetDecision.spend(usage, policy: policy, frequentPushesEnabled: false, now: earlier)
            == .allow(BudgetUsage(priority10Count: 1, windowStart: earlier)))
    }

    /// A score translator whose budget is tiny, so goals run out quickly.
    func tinyBudgetRun() -> ActivityRun {
        var configuration = Fixtures.configuration
        configuration.domains = configuration.domains.map { domain in
            var domain = domain
            if domain.name == "score" { domain.policy.budget = policy }
            return domain
        }
        return ActivityRun(translator: Translator(configuration: configuration))
    }

    /// Goal events one minute apart with growing scores.
    func goal(_ number: Int) throws -> DomainEvent {
        var event = try Fixtures.event("score-goal")
        event.envelope.id = "goal-\(number)"
        event.envelope.time = EventTime(millisecondsSince1970: 1_795_256_640_000 + Int64(number) * 60_000)
        if case .object(var state) = event.contentState {
            state["homeScore"] = .integer(Int64(number))
            event.contentState = .object(state)
        }
        return event
    }

    @Test func overBudgetGoalIsDowngradedWithoutAlertThenDeadLettered() throws {
        var run = tinyBudgetRun()
        _ = try run.apply("score-scheduled")
        _ = try run.apply("score-kickoff")  // priority 10 #1
        let first = try Fixtures.sent(run.apply(try goal(1)))  // #2: allowed
        #expect(first.jobs.allSatisfy { $0.priority == .high })
        #expect(String(decoding: first.jobs[0].payload, as: UTF8.self).contains("\"alert\""))

        let second = try Fixtures.sent(run.apply(try goal(2)))  // #3: downgraded
        #expect(second.jobs.allSatisfy { $0.priority == .low })
        #expect(!String(decoding: second.jobs[0].payload, as: UTF8.self).contains("\"alert\""))
        #expect(second.traceNotes.contains { $0.contains("downgraded to 5") })
        #expect(second.newBudget.priority10Count == 3)

        let third = run.apply(try goal(3))  // #4: past the cap
        guard case .deadLetter(let rejection) = third else { Issue.record("got \(third)"); return }
        #expect(rejection.reason == .overBudget)
        #expect(rejection.reason.rawValue == "over-budget")
    }

    @Test func routineUpdatesDoNotSpendBudget() throws {
        var run = tinyBudgetRun()
        _ = try run.apply("score-scheduled")
        let tick = try Fixtures.sent(try run.apply("score-kickoff"))
        #expect(tick.newBudget.priority10Count == 1)
        let clock = try Fixtures.sent(try run.apply("score-clock"))
        #expect(clock.jobs.allSatisfy { $0.priority == .low })
        #expect(clock.newBudget.priority10Count == 1)
    }

    @Test func endsAreNeverDowngradedOrDeadLettered() throws {
        var run = tinyBudgetRun()
        _ = try run.apply("score-scheduled")
        run.budget = BudgetUsage(priority10Count: 99, windowStart: EventTime(Fixtures.base))
        let end = try Fixtures.sent(try run.apply("score-final"))
        #expect(end.jobs.allSatisfy { $0.priority == .high && $0.isTerminal })
    }
}
