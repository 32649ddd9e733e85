import Foundation
import LivelineCodecs
import LivelineCore
import Testing

/// Fan-out, push-to-start, broadcast and the no-target case.
@Suite("Targets")
struct TargetingTests {
    /// Logs and trace lines name a device by its token's first 8 characters, never the whole token.
    @Test func logDescriptionsShortenTokens() {
        let token = String(repeating: "ab", count: 32)
        #expect(PushTarget.device(token: token, kind: .update).logDescription == "update token abababab…")
        #expect(PushTarget.device(token: token, kind: .pushToStart, environment: .sandbox).logDescription
            == "sandbox pushToStart token abababab…")
        #expect(PushTarget.channel(key: "game-7").logDescription == "channel game-7")
        var line = "to "
        PushTarget.device(token: token, kind: .update).writeLogDescription(to: &line)
        #expect(line == "to update token abababab…")
    }

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
        #expect(drop.newSnapshot?.startedAt == nil, "nothing went out, so nothing started on a device")
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

    /// A game (the standard score domain: shared, on a channel) is one broadcast per
    /// update for the whole audience; one user's settings do not stop it.
    @Test func broadcastSendsOneJobToTheActivitysChannel() throws {
        var run = ActivityRun()
        run.tokens = TokenSnapshot(pushToStartTokens: [Fixtures.startToken], channelID: "Y2hhbm5lbA==")
        run.preferences.activitiesEnabled = false
        let scheduled = try Fixtures.sent(try run.apply("score-scheduled"))
        let channel = PushTarget.channel(key: scheduled.newSnapshot.id)
        #expect(scheduled.jobs.map(\.target) == [channel])
        #expect(scheduled.jobs[0].expiration == 0, "a channel that stores nothing takes apns-expiration 0")
        for name in ["score-kickoff", "score-clock"] { _ = try run.apply(name) }
        let send = try Fixtures.sent(try run.apply("score-goal"))
        #expect(send.jobs.count == 1)
        #expect(send.jobs[0].target == channel)
        #expect(send.jobs[0].payload == (try Fixtures.goldenPayload("score-4-goal")))
        let end = try Fixtures.sent(try run.apply("score-final"))
        #expect(end.jobs.map(\.target) == [channel])
        #expect(end.jobs[0].isTerminal)
    }

    /// On a channel that stores the latest message, a broadcast expires at its stale date.
    @Test func aChannelThatStoresTheLatestMessageExpiresAtTheStaleDate() throws {
        var configuration = Fixtures.configuration
        configuration.domains = configuration.domains.map { domain in
            var domain = domain
            if domain.name == "score" { domain.channel.storesLatestMessage = true }
            return domain
        }
        var run = ActivityRun(translator: Translator(configuration: configuration))
        let send = try Fixtures.sent(try run.apply("score-scheduled"))
        let payload = try JSONValue.parse(send.jobs[0].payload)
        guard case .integer(let staleDate) = payload["aps"]?["stale-date"] else { Issue.record("no stale date"); return }
        #expect(send.jobs[0].expiration == staleDate)
        #expect(send.jobs[0].expiration != nil)
    }

    /// The start names its topics: every follower's device gets one start, with the
    /// channel to listen on; a device older than iOS 18, and a development build's (sandbox)
    /// device on this production channel, which it could never hear, get it without.
    @Test func aGamesStartGoesToItsAudienceWithTheChannel() throws {
        var run = ActivityRun()
        let old = Fixtures.tokenB
        run.tokens = TokenSnapshot(
            sandboxTokens: [Fixtures.startToken], channelID: "Y2hhbm5lbA==",
            audience: [Fixtures.startToken, Fixtures.tokenA, old, Fixtures.tokenA.uppercased()], osVersions: [old: "17.4"])
        var start = try Fixtures.event("score-scheduled")
        start.topics = ["team:ars", "team:che"]
        let send = try Fixtures.sent(run.apply(start))
        #expect(send.jobs.map(\.target) == [
            .device(token: Fixtures.tokenA, kind: .pushToStart),
            .device(token: Fixtures.startToken, kind: .pushToStart, environment: .sandbox),
            .device(token: old, kind: .pushToStart),
        ], "one start per device, those on the channel first")
        #expect(send.jobs.allSatisfy { $0.event == .start && $0.priority == .high })
        let onChannel = try JSONValue.parse(send.jobs[0].payload)["aps"]
        #expect(onChannel?["input-push-channel"] == .string("Y2hhbm5lbA=="))
        #expect(onChannel?["input-push-token"] == nil)
        #expect(onChannel?["alert"] != nil && onChannel?["attributes"] != nil)
        let older = try JSONValue.parse(send.jobs[2].payload)["aps"]
        #expect(older?["input-push-channel"] == nil)
        #expect(older?["input-push-token"] == .integer(1))
        #expect(send.jobs[1].payload == send.jobs[2].payload, "the sandbox device is started per token too")

        // On a sandbox channel it is the production devices that go per token.
        var sandboxRun = ActivityRun()
        sandboxRun.tokens = run.tokens
        sandboxRun.tokens.channelEnvironment = .sandbox
        let onSandbox = try Fixtures.sent(sandboxRun.apply(start))
        #expect(onSandbox.jobs.first?.target == .device(token: Fixtures.startToken, kind: .pushToStart, environment: .sandbox))
        #expect(try JSONValue.parse(onSandbox.jobs[0].payload)["aps"]?["input-push-channel"] == .string("Y2hhbm5lbA=="))
        #expect(onSandbox.jobs.dropFirst().allSatisfy { (try? JSONValue.parse($0.payload)["aps"]?["input-push-token"]) == .integer(1) })

        // Sent once: the same start again (a replay) broadcasts instead of starting again.
        run.tokens.audience = [Fixtures.tokenA]
        var again = try Fixtures.event("score-kickoff")
        again.topics = ["team:ars"]
        let update = try Fixtures.sent(run.apply(again))
        #expect(update.jobs.map(\.target) == [.channel(key: "g-77")])
    }

    /// A start whose activity has no attributes cannot be started: a dead letter that says so.
    /// A start without followers is a counted drop, with the state kept.
    @Test func aStartWithoutAttributesOrFollowers() throws {
        var run = ActivityRun()
        run.tokens = TokenSnapshot(channelID: "Y2hhbm5lbA==", audience: [Fixtures.tokenA])
        var start = try Fixtures.event("score-kickoff")  // no attributes
        start.topics = ["team:ars"]
        guard case .deadLetter(let rejection) = run.apply(start) else { Issue.record("not a dead letter"); return }
        #expect(rejection.reason == .invalidEvent)
        #expect(rejection.message.contains("no attributes"))

        run.tokens.audience = []
        var withAttributes = try Fixtures.event("score-scheduled")
        withAttributes.topics = ["team:ars"]
        guard case .drop(let drop) = run.apply(withAttributes) else { Issue.record("not a drop"); return }
        #expect(drop.reason == .noTarget)
        #expect(drop.newSnapshot != nil)
    }

    /// Devices that subscribed an update token to the game (too old for channels) get each
    /// update per token beside the broadcast.
    @Test func subscribedDevicesGetEachUpdatePerToken() throws {
        var run = ActivityRun()
        run.tokens = TokenSnapshot(updateTokens: [Fixtures.tokenA], channelID: "Y2hhbm5lbA==")
        let send = try Fixtures.sent(try run.apply("score-scheduled"))
        #expect(send.jobs.map(\.target) == [.channel(key: "g-77"), .device(token: Fixtures.tokenA, kind: .update)])
        #expect(send.jobs[0].payload == send.jobs[1].payload)
        guard case .integer(let staleDate) = try JSONValue.parse(send.jobs[1].payload)["aps"]?["stale-date"] else {
            Issue.record("no stale date"); return
        }
        #expect(send.jobs[1].expiration == staleDate)
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
