import Foundation
import LivelineCore
import Testing

/// Fan-out, push-to-start, broadcast and the no-target case.
@Suite("Targets")
struct TargetingTests {
    @Test func fansOutToEveryUpdateTokenWithTheSamePayload() throws {
        var run = ActivityRun()
        run.tokens.updateTokens = [Fixtures.tokenB, Fixtures.tokenA, Fixtures.tokenA.uppercased(), "not-hex"]
        let send = try Fixtures.sent(try run.apply("ride-arrived"))
        #expect(send.jobs.map(\.target) == [
            .device(token: Fixtures.tokenB, kind: .update), .device(token: Fixtures.tokenA, kind: .update),
        ].sorted { $0.sortKey < $1.sortKey })
        #expect(Set(send.jobs.map(\.payload)).count == 1)
        #expect(Set(send.jobs.map(\.jobId)).count == 2)
        #expect(send.traceNotes.contains { $0.contains("malformed") })
        #expect(send.consumedPushToStart.isEmpty)
    }

    @Test func eachTokenKeepsItsEnvironment() throws {
        var run = ActivityRun()
        run.tokens = TokenSnapshot(updateTokens: [Fixtures.tokenA, Fixtures.tokenB], sandboxTokens: [Fixtures.tokenB])
        let send = try Fixtures.sent(try run.apply("ride-arrived"))
        #expect(Set(send.jobs.map(\.target)) == [
            .device(token: Fixtures.tokenA, kind: .update, environment: .production),
            .device(token: Fixtures.tokenB, kind: .update, environment: .sandbox),
        ])

        var start = ActivityRun()
        start.tokens = TokenSnapshot(pushToStartTokens: [Fixtures.startToken], sandboxTokens: [Fixtures.startToken])
        let started = try Fixtures.sent(try start.apply("ride-assigned"))
        #expect(started.jobs.map(\.target) == [.device(token: Fixtures.startToken, kind: .pushToStart, environment: .sandbox)])
    }

    @Test func pushToStartWhenThereIsNoUpdateToken() throws {
        var run = ActivityRun()
        run.tokens = TokenSnapshot(updateTokens: [], pushToStartTokens: [Fixtures.startToken])
        let send = try Fixtures.sent(try run.apply("ride-assigned"))
        #expect(send.jobs.count == 1)
        #expect(send.jobs[0].target == .device(token: Fixtures.startToken, kind: .pushToStart))
        #expect(send.jobs[0].event == .start)
        #expect(send.jobs[0].priority == .high)
        #expect(send.consumedPushToStart == [Fixtures.startToken])
        #expect(send.newSnapshot.pushToStartSentAt != nil)
    }

    /// Each of the user's devices has its own push-to-start token, and each gets the start.
    @Test func pushToStartGoesToEveryDeviceOfTheUser() throws {
        var run = ActivityRun()
        run.tokens = TokenSnapshot(pushToStartTokens: [Fixtures.startToken, Fixtures.tokenB], sandboxTokens: [Fixtures.tokenB])
        let send = try Fixtures.sent(try run.apply("ride-assigned"))
        #expect(send.jobs.map(\.target) == [
            .device(token: Fixtures.startToken, kind: .pushToStart),
            .device(token: Fixtures.tokenB, kind: .pushToStart, environment: .sandbox),
        ])
        #expect(Set(send.jobs.map(\.payload)).count == 1, "the same start on each device")
        #expect(send.consumedPushToStart == [Fixtures.startToken, Fixtures.tokenB])
    }

    @Test func noSecondStartWhileWaitingForTheUpdateToken() throws {
        var run = ActivityRun()
        run.tokens = TokenSnapshot(updateTokens: [], pushToStartTokens: [Fixtures.startToken])
        _ = try run.apply("ride-assigned")
        // iOS issued a new push-to-start token, but the activity already exists.
        run.tokens.pushToStartTokens = [Fixtures.tokenB]
        let decision = try run.apply("ride-eta-tick")
        guard case .drop(let drop) = decision else { Issue.record("got \(decision)"); return }
        #expect(drop.reason == .noTarget)
        #expect(drop.newSnapshot?.lastStatus == "driverEnRoute")
        // Once the new activity reports its update token, updates flow.
        run.tokens.updateTokens = [Fixtures.tokenA]
        let send = try Fixtures.sent(try run.apply("ride-arrived"))
        #expect(send.jobs.map(\.event) == [.update])
    }

    @Test func pushToStartNeedsAttributes() throws {
        var run = ActivityRun()
        run.tokens = TokenSnapshot(updateTokens: [], pushToStartTokens: [Fixtures.startToken])
        let decision = try run.apply("ride-eta-tick")  // carries no attributes
        guard case .drop(let drop) = decision else { Issue.record("got \(decision)"); return }
        #expect(drop.reason == .noTarget)
        #expect(drop.message.contains("attributes"))
    }

    @Test func anActivityIsNotStartedOnlyToEnd() throws {
        var run = ActivityRun()
        run.tokens = TokenSnapshot(updateTokens: [], pushToStartTokens: [Fixtures.startToken])
        let decision = try run.apply("ride-cancelled")
        guard case .drop(let drop) = decision else { Issue.record("got \(decision)"); return }
        #expect(drop.reason == .noTarget)
        #expect(drop.newSnapshot?.endReason == "cancelled")
    }

    @Test func noTargetStillAppliesTheState() throws {
        var run = ActivityRun()
        run.tokens = TokenSnapshot()
        let decision = try run.apply("ride-assigned")
        guard case .drop(let drop) = decision else { Issue.record("got \(decision)"); return }
        #expect(drop.reason == .noTarget)
        #expect(drop.newSnapshot?.lastContentState?["status"] == .string("driverAssigned"))
        #expect(drop.newSnapshot?.attributes?["riderName"] == .string("Jordan"))
        #expect(drop.newSnapshot?.startedAt == EventTime(millisecondsSince1970: 1_795_255_200_120))
    }

    @Test func domainWithoutPushToStartAlertNeverStarts() throws {
        var configuration = Fixtures.configuration
        configuration.domains = configuration.domains.map { domain in
            var domain = domain
            domain.policy.pushToStartAlert = nil
            return domain
        }
        var run = ActivityRun(translator: Translator(configuration: configuration))
        run.tokens = TokenSnapshot(updateTokens: [], pushToStartTokens: [Fixtures.startToken])
        let decision = try run.apply("ride-assigned")
        guard case .drop(let drop) = decision else { Issue.record("got \(decision)"); return }
        #expect(drop.reason == .noTarget)
    }

    /// The score domain switched to broadcast channels.
    var channelTranslator: Translator {
        var configuration = Fixtures.configuration
        configuration.domains = configuration.domains.map { domain in
            var domain = domain
            if domain.name == "score" { domain.delivery = .channel }
            return domain
        }
        return Translator(configuration: configuration)
    }

    @Test func broadcastSendsOneJobToTheActivitysChannel() throws {
        var run = ActivityRun(translator: channelTranslator)
        run.tokens = TokenSnapshot(updateTokens: [Fixtures.tokenA], pushToStartTokens: [Fixtures.startToken])
        run.preferences.activitiesEnabled = false  // one user's setting does not stop a broadcast
        let scheduled = try Fixtures.sent(try run.apply("score-scheduled"))
        let channel = PushTarget.channel(key: scheduled.newSnapshot.id)
        #expect(scheduled.jobs.map(\.target) == [channel])
        for name in ["score-kickoff", "score-clock"] { _ = try run.apply(name) }
        let send = try Fixtures.sent(try run.apply("score-goal"))
        #expect(send.jobs.count == 1)
        #expect(send.jobs[0].target == channel)
        #expect(send.jobs[0].payload == (try Fixtures.goldenPayload("score-4-goal")))
        #expect(send.consumedPushToStart.isEmpty)
        let end = try Fixtures.sent(try run.apply("score-final"))
        #expect(end.jobs.map(\.target) == [channel])
        #expect(end.jobs[0].isTerminal)
    }
}

extension PushTarget {
    var sortKey: String {
        switch self {
        case .device(let token, _, _): token
        case .channel(let key): key
        }
    }
}
