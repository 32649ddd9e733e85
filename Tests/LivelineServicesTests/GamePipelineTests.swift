import APNsSimulator
import Foundation
import LivelineAPNs
import LivelineCodecs
import LivelineCore
import LivelineModels
import LivelineProducer
import LivelineServices
import LivelineStore
import LivelineStoreTestSupport
import LivelineTestSupport
import Testing

/// Events through a real translator and a real sender to the simulator, on one store and
/// one topology: what a device receives for what a producer published.
@Suite("Translator and sender together")
struct GamePipelineTests {
    static let bundle = TranslatorHarness.bundleId
    /// Recent enough that no update is past its stale date when it is sent.
    static let base = Date().addingTimeInterval(-90).roundedToMilliseconds

    /// A translator that opens channels at the simulator, feeding a sender that pushes to it.
    static func withPipeline<T: Sendable>(
        store kind: StoreKind, name: String = #function, audiencePage: Int = TranslatorSettings().audiencePage,
        translator: Translator = TranslatorHarness.translator, _ body: (TranslatorHarness, SenderHarness) async throws -> T
    ) async throws -> T {
        try await withSender(bundleIDs: [bundle], store: kind) { sender in
            let store = try #require(sender.store as? any ActivityStore)
            let client = sender.client(bundle)
            let channels = APNsClientDirectory([
                .init(bundleID: bundle, channelEnvironment: .production, production: client, sandbox: client),
            ])
            let settings = TranslatorSettings(audiencePage: audiencePage, lateStartInterval: .milliseconds(200))
            return try await TranslatorHarness.run(
                on: store, name: name, topology: sender.topology, settings: settings, channels: channels, translator: translator
            ) { translator, _ in
                try await body(translator, sender)
            }
        }
    }

    static func game(
        _ id: String, home: Int, status: GameStatus = .live, topics: [String]? = nil, at seconds: Double
    ) throws -> LivelineEvent {
        let state = ScoreAttributes.ContentState(
            homeScore: home, awayScore: 0, period: "1st half", clock: "\(Int(seconds / 60))'", status: status,
            lastPlay: home > 0 ? "Goal!" : nil)
        let attributes = topics == nil ? nil : ScoreAttributes(
            gameId: id, league: "League", homeTeam: .init(name: "Home", abbreviation: "HOM"),
            awayTeam: .init(name: "Away", abbreviation: "AWY"))
        return try LivelineEvent.score(
            activityId: id, state: state, attributes: attributes, topics: topics, id: "\(id)-\(Int(seconds))",
            time: base.addingTimeInterval(seconds))
    }

    static func aps(_ delivery: APNsSimulatorDelivery) -> JSONValue? {
        (try? JSONValue.parse(Data(delivery.payload)))?["aps"]
    }

    /// A development build's device (sandbox) follows a team whose game broadcasts on a
    /// production channel, which it could never hear: it is started per token, and once its
    /// app registers the activity's update token, served per token. A production device
    /// beside it is started into the channel and hears the goal there.
    @Test(arguments: StoreKind.underTest)
    func aSandboxDeviceOnAProductionChannelIsServedPerToken(store: StoreKind) async throws {
        try await Self.withPipeline(store: store) { translator, sender in
            let production = randomDeviceToken(), sandbox = randomDeviceToken()
            for (user, token, environment) in [("p", production, APNsEnvironment.production), ("s", sandbox, .sandbox)] {
                try await translator.store.registerPushToStartToken(PushToStartToken(
                    userID: user, attributesType: "ScoreAttributes", token: token, registeredAt: Date(),
                    environment: environment, osVersion: "18.2"))
                _ = try await translator.store.follow(userID: user, topic: "team:hom", at: Date())
            }
            try await translator.publisher.publish(try Self.game("g-env", home: 0, topics: ["team:hom"], at: 0))
            try await eventually("both devices started") {
                !sender.simulator.deliveries(toDevice: production).isEmpty && !sender.simulator.deliveries(toDevice: sandbox).isEmpty
            }
            let onChannel = try #require(Self.aps(sender.simulator.deliveries(toDevice: production)[0]))
            let perToken = try #require(Self.aps(sender.simulator.deliveries(toDevice: sandbox)[0]))
            #expect(onChannel["event"] == .string("start") && onChannel["input-push-channel"] != nil)
            #expect(perToken["event"] == .string("start") && perToken["input-push-channel"] == nil)
            #expect(perToken["input-push-token"] == .integer(1))

            // The sandbox app reports the started activity's update token, as an iOS 17 app does
            // (the api files it under the game's owner, as the caller's device).
            let update = randomDeviceToken()
            let owner = try #require(try await translator.store.activity(id: "g-env")).userID
            #expect(try await translator.store.registerUpdateToken(UpdateTokenRegistration(
                activityID: "g-env", deviceID: "s:phone", userID: owner, token: update, environment: .sandbox,
                domain: "score", attributesType: "ScoreAttributes", at: Date())) == .created(createdActivity: false))
            try await translator.publisher.publish(try Self.game("g-env", home: 1, at: 60))
            try await eventually("the goal reaches both") {
                sender.simulator.deliveries(toDevice: update).count == 1 && sender.simulator.deliveries(toDevice: production).count == 2
            }
            let goal = try #require(sender.simulator.deliveries(toDevice: update).first)
            #expect(Self.aps(goal)?["content-state"]?["homeScore"] == .integer(1))
            #expect(goal.priority == 10)
            #expect(sender.simulator.deliveries(toDevice: sandbox).count == 1, "nothing for the sandbox device on the channel")
        }
    }

    /// A game whose domain sends its goals as localization keys, to a fan whose app decodes
    /// content-state version 1 and one whose app decodes the current version, under each of
    /// the channel's choices. `perToken`: the older device is started without the channel,
    /// and once its app reports the activity's update token, it hears the intermission per
    /// token as the halftime its app knows, while the channel carries the intermission.
    /// `oldest`: both listen, and the channel carries halftime. The goal's title and body are
    /// `{"loc-key", "loc-args"}` objects, as Apple's ActivityKit push documentation shows.
    @Test(arguments: StoreKind.underTest, [ChannelPolicy.OlderContentStates.perToken, .oldest])
    func aChannelCarriesLocalizedAlertsAndServesAnOlderAppAsItsDomainChooses(
        store: StoreKind, choice: ChannelPolicy.OlderContentStates
    ) async throws {
        var configuration = TranslatorConfiguration.standard(bundleId: Self.bundle)
        configuration.domains = configuration.domains.map { domain in
            guard domain.name == "score" else { return domain }
            var domain = domain
            domain.channel.olderContentStates = choice
            domain.policy.changeRules[0].alert = AlertTemplate(
                title: .localized(key: "GOAL_TITLE", arguments: ["{homeTeam.abbreviation}", "{homeScore}"]),
                body: .localized(key: "GOAL_BODY", arguments: ["{lastPlay|?}"]), sound: "default")
            return domain
        }
        try await Self.withPipeline(store: store, translator: Translator(configuration: configuration)) { translator, sender in
            let old = randomDeviceToken(), new = randomDeviceToken()
            for (user, token, version) in [("old", old, 1), ("new", new, 2)] {
                try await translator.store.registerPushToStartToken(PushToStartToken(
                    userID: user, attributesType: "ScoreAttributes", token: token, registeredAt: Date(), osVersion: "18.2",
                    contentVersion: version))
                _ = try await translator.store.follow(userID: user, topic: "team:hom", at: Date())
            }
            try await translator.publisher.publish(try Self.game("g-ver", home: 0, topics: ["team:hom"], at: 0))
            try await eventually("both devices started") {
                !sender.simulator.deliveries(toDevice: old).isEmpty && !sender.simulator.deliveries(toDevice: new).isEmpty
            }
            let oldStart = try #require(Self.aps(sender.simulator.deliveries(toDevice: old)[0]))
            #expect(Self.aps(sender.simulator.deliveries(toDevice: new)[0])?["input-push-channel"] != nil)
            var oldListens = true
            switch choice {
            case .perToken:
                #expect(oldStart["input-push-channel"] == nil && oldStart["input-push-token"] == .integer(1))
                oldListens = false
                let owner = try #require(try await translator.store.activity(id: "g-ver")).userID
                _ = try await translator.store.registerUpdateToken(UpdateTokenRegistration(
                    activityID: "g-ver", deviceID: "old:phone", userID: owner, token: old, contentVersion: 1,
                    domain: "score", attributesType: "ScoreAttributes", at: Date()))
            case .oldest:
                #expect(oldStart["input-push-channel"] != nil, "every device listens")
            }

            // One at a time: in one batch the goal would supersede the intermission.
            try await translator.publisher.publish(try Self.game("g-ver", home: 0, status: .intermission, at: 60))
            try await eventually("the intermission reaches both") {
                sender.simulator.deliveries(toDevice: old).count == 2 && sender.simulator.deliveries(toDevice: new).count == 2
            }
            try await translator.publisher.publish(try Self.game("g-ver", home: 1, status: .live, at: 120))
            try await eventually("the goal reaches both") {
                sender.simulator.deliveries(toDevice: old).count == 3 && sender.simulator.deliveries(toDevice: new).count == 3
            }
            let seen = { (token: String) in sender.simulator.deliveries(toDevice: token).compactMap(Self.aps) }
            #expect(seen(new)[1]["content-state"]?["status"] == .string(choice == .oldest ? "halftime" : "intermission"))
            #expect(seen(old)[1]["content-state"]?["status"] == .string("halftime"), "version 1 knows no intermission")
            #expect(sender.simulator.deliveries(toDevice: old).dropFirst().allSatisfy { ($0.headers["apns-channel-id"] != nil) == oldListens })
            for aps in [seen(old)[2], seen(new)[2]] {
                #expect(aps["alert"]?["title"] == .object(["loc-key": .string("GOAL_TITLE"), "loc-args": .array([.string("HOM"), .string("1")])]))
                #expect(aps["alert"]?["body"] == .object(["loc-key": .string("GOAL_BODY"), "loc-args": .array([.string("Goal!")])]))
            }
            let counted = translator.metrics.total("liveline_translator_content_state_jobs_total", [("version", "1")])
            #expect(counted >= 2, "the jobs in version 1's form are counted: \(counted)")
        }
    }

    /// A fan who follows a team after kick-off, and a follower's new device, are started into
    /// the live game within seconds, with its current score and on its channel, each once: a
    /// token refresh and a second topic of the game start nobody again. After the final
    /// whistle, a new follower is started into nothing.
    @Test(arguments: StoreKind.underTest)
    func followersWhoComeAfterKickOffAreStartedOnceIntoTheLiveGame(store: StoreKind) async throws {
        try await Self.withPipeline(store: store) { translator, sender in
            func device(_ user: String, _ device: String, _ token: String) async throws {
                try await translator.store.registerPushToStartToken(PushToStartToken(
                    userID: user, attributesType: "ScoreAttributes", deviceID: device, token: token, registeredAt: Date(),
                    osVersion: "18.2"))
            }
            func events(_ token: String) -> [String] {
                sender.simulator.deliveries(toDevice: token).compactMap { Self.aps($0)?["event"]?.stringValue }
            }
            let early = randomDeviceToken(), late = randomDeviceToken(), tablet = randomDeviceToken(), after = randomDeviceToken()
            try await device("early", "phone", early)
            _ = try await translator.store.follow(userID: "early", topic: "team:hom", at: Date())
            try await translator.publisher.publish(try Self.game("g-late", home: 0, topics: ["team:hom", "league:l"], at: 0))
            // The goal after the start has reached the device: a broadcast published with the
            // start can reach APNs before the start does (another lane), and the device misses it.
            try await eventually("the early follower started") { events(early) == ["start"] }
            try await translator.publisher.publish(try Self.game("g-late", home: 1, at: 60))
            try await eventually("the early follower started and at 1-0") { events(early) == ["start", "update"] }

            try await device("late", "phone", late)
            _ = try await translator.store.follow(userID: "late", topic: "team:hom", at: Date())
            try await device("early", "tablet", tablet)
            try await eventually("the late follower and the new tablet started") { events(late) == ["start"] && events(tablet) == ["start"] }
            let start = try #require(Self.aps(sender.simulator.deliveries(toDevice: late)[0]))
            #expect(start["content-state"]?["homeScore"] == .integer(1), "the game as it stands")
            #expect(start["input-push-channel"] != nil, "on the game's channel")
            #expect(start["attributes-type"] == .string("ScoreAttributes"))

            try await device("late", "phone", late)
            _ = try await translator.store.follow(userID: "late", topic: "league:l", at: Date())
            try await translator.publisher.publish(try Self.game("g-late", home: 2, at: 120))
            try await eventually("the second goal reaches all three on the channel") {
                events(late).count == 2 && events(tablet).count == 2 && events(early).count == 3
            }
            #expect(events(late) == ["start", "update"] && events(tablet) == ["start", "update"], "started once each")

            try await translator.publisher.publish(try Self.game("g-late", home: 2, status: .final, at: 180))
            try await eventually("the game ended") { events(early).last == "end" }
            try await device("after", "phone", after)
            _ = try await translator.store.follow(userID: "after", topic: "team:hom", at: Date())
            try await Task.sleep(for: .seconds(1))
            #expect(events(after).isEmpty, "nobody is started into a game that ended")
            #expect(translator.metrics.total("liveline_translator_late_starts_total") == 2)
            let trace = try await translator.store.trace(activityID: "g-late", limit: 100)
            // One round or two, as the devices came.
            let traced = trace.filter { $0.kind == .pushDecided && $0.detail.hasPrefix("late start for") }
            #expect(!traced.isEmpty && traced.allSatisfy { $0.detail.contains("device(s) that came after the start") })
        }
    }

    /// A start whose audience is more than a page: the translator reads it a page at a time
    /// once the start is stored, and every follower is started once, with the start the first
    /// page got. A fan who follows while the pages are read is started once too, by the page
    /// or by a late start, never by both.
    @Test(arguments: StoreKind.underTest)
    func aStartForMoreFollowersThanAPageReachesEachOnce(store: StoreKind) async throws {
        try await Self.withPipeline(store: store, audiencePage: 4) { translator, sender in
            var fans: [String] = []
            for index in 0..<11 {
                let token = randomDeviceToken()
                fans.append(token)
                try await translator.store.registerPushToStartToken(PushToStartToken(
                    userID: "fan-\(index)", attributesType: "ScoreAttributes", token: token, registeredAt: Date(), osVersion: "18.2"))
                _ = try await translator.store.follow(userID: "fan-\(index)", topic: "team:hom", at: Date())
            }
            try await translator.publisher.publish(try Self.game("g-pages", home: 0, topics: ["team:hom"], at: 0))
            let late = randomDeviceToken()
            try await translator.store.registerPushToStartToken(PushToStartToken(
                userID: "fan-late", attributesType: "ScoreAttributes", token: late, registeredAt: Date(), osVersion: "18.2"))
            _ = try await translator.store.follow(userID: "fan-late", topic: "team:hom", at: Date())
            try await eventually("every follower started") {
                (fans + [late]).allSatisfy { !sender.simulator.deliveries(toDevice: $0).isEmpty }
            }
            try await Task.sleep(for: .milliseconds(600))
            let starts = (fans + [late]).map { sender.simulator.deliveries(toDevice: $0) }
            #expect(starts.allSatisfy { $0.count == 1 }, "each started once: \(starts.map(\.count))")
            let payloads = Set(fans.compactMap { sender.simulator.deliveries(toDevice: $0).first.flatMap(Self.aps) })
            #expect(payloads.count == 1, "the same start on every page")
            #expect(payloads.first?["event"] == .string("start") && payloads.first?["input-push-channel"] != nil)
            let trace = try await translator.store.trace(activityID: "g-pages", limit: 100)
            let paged = try #require(trace.first { $0.detail.contains("more device(s) of its audience") })
            // 4 with the batch, then 4 and the last 3 (4, if the late fan followed before).
            #expect(paged.detail.hasSuffix("read in 2 page(s)"), "\(paged.detail)")
        }
    }

    /// A game whose first event comes 10 h or a day before kick-off is started, updated and
    /// ended like any other: iOS's 8 hours count from the start. Its channel, opened at that
    /// first event, outlives the wait (a sweep as late as kick-off keeps it) and is deleted
    /// after the end.
    @Test(arguments: StoreKind.underTest, [10.0, 24.0])
    func aGameAnnouncedHoursAheadIsStartedUpdatedAndEndedAndKeepsItsChannelUntilTheEnd(
        store: StoreKind, hoursAhead: Double
    ) async throws {
        try await Self.withPipeline(store: store) { translator, sender in
            let fan = randomDeviceToken()
            try await translator.store.registerPushToStartToken(PushToStartToken(
                userID: "fan", attributesType: "ScoreAttributes", token: fan, registeredAt: Date(), osVersion: "18.2"))
            _ = try await translator.store.follow(userID: "fan", topic: "team:hom", at: Date())
            func events() -> [String] { sender.simulator.deliveries(toDevice: fan).compactMap { Self.aps($0)?["event"]?.stringValue } }

            try await translator.publisher.publish(try Self.game("g-ahead", home: 0, status: .scheduled, at: -hoursAhead * 3_600))
            try await eventually("the announcement stored, its channel opened") {
                let stored = try await translator.store.activity(id: "g-ahead") != nil
                let opened = try await translator.store.channel(domain: "score", key: "g-ahead") != nil
                return stored && opened
            }
            let channelID = try #require(try await translator.store.channel(domain: "score", key: "g-ahead")).channelID
            let sweeper = ChannelSweeper(
                store: translator.store, clients: APNsClientDirectory([sender.client(Self.bundle)]), apps: [Self.bundle],
                keys: AppKeys(defaultApp: Self.bundle), settings: .init(orphanGrace: .milliseconds(10)), logger: Broker.logger)
            #expect(try await sweeper.sweep(now: Date().addingTimeInterval(hoursAhead * 3_600)) == 0, "kept through the wait")

            try await translator.publisher.publish(try Self.game("g-ahead", home: 0, topics: ["team:hom"], at: 0))
            try await translator.publisher.publish(try Self.game("g-ahead", home: 1, at: 60))
            try await eventually("started and updated") { events() == ["start", "update"] }
            #expect(try await sweeper.sweep(now: Date()) == 0)
            try await translator.publisher.publish(try Self.game("g-ahead", home: 1, status: .final, at: 120))
            try await eventually("ended, and the channel deleted after the end") {
                let deleted = try await translator.store.channel(domain: "score", key: "g-ahead")?.deletedAt != nil
                return events().last == "end" && deleted
            }
            #expect(!sender.simulator.channelIDs(bundleID: Self.bundle).contains(channelID))
        }
    }

    /// A user erased mid-ride: the ride is ended on their phone first, dismissed at once,
    /// then everything that names them goes; the game they followed stays for the others.
    @Test(arguments: StoreKind.underTest)
    func anErasedUsersRideIsEndedOnTheirPhoneThenForgotten(store: StoreKind) async throws {
        try await Self.withPipeline(store: store) { translator, sender in
            let phone = randomDeviceToken()
            try await translator.registerUpdateToken(phone, activity: "r-erase", user: "u-9")
            try await translator.publisher.publish(try Events.ride("r-erase", .driverEnRoute, at: 590))
            try await eventually("the ride is on the phone") { !sender.simulator.deliveries(toDevice: phone).isEmpty }
            _ = try await translator.store.follow(userID: "u-9", topic: "team:hom", at: Date())

            let eraser = UserEraser(
                store: translator.store, translator: TranslatorHarness.translator, publisher: translator.control,
                topology: translator.topology)
            let summary = try await eraser.forget("u-9")
            #expect(summary.ended == 1 && summary.endPushes == 1)
            #expect(summary.erased.activities == 1 && summary.erased.updateTokens == 1 && summary.erased.follows == 1, "\(summary)")
            try await eventually("the end reaches the phone") {
                Self.aps(sender.simulator.deliveries(toDevice: phone).last!)?["event"] == .string("end")
            }
            let end = try #require(Self.aps(sender.simulator.deliveries(toDevice: phone).last!))
            guard case .integer(let timestamp)? = end["timestamp"], case .integer(let dismissal)? = end["dismissal-date"] else {
                Issue.record("no timestamp or dismissal date: \(end)")
                return
            }
            #expect(dismissal < timestamp, "dismissed at once")
            #expect(end["content-state"]?["status"] == .string("driverEnRoute"), "its last state")
            #expect(try await translator.store.activity(id: "r-erase") == nil)
            #expect(try await eraser.forget("u-9").isEmpty, "a second erasure finds nothing")
        }
    }

    /// The priority-10 budget end to end, through the broker and the store: an activity whose
    /// every update asks for priority 10, on a budget of two an hour capped at four. Rings 1
    /// and 2 go at 10; 3 and 4 are downgraded to 5; 5 and 6 pass the cap and are dead-lettered
    /// `over-budget`. Replayed, those two go at priority 5 and spend nothing.
    @Test(arguments: StoreKind.underTest)
    func anActivityOverItsBudgetIsDowngradedThenDeadLetteredAndItsReplayGoesAtPriority5(store: StoreKind) async throws {
        try await Self.withPipeline(store: store) { translator, sender in
            try await DeadLetterPipelineTests.withKeeper(sender) {
                let token = randomDeviceToken()
                try await translator.registerUpdateToken(token, activity: "al-1", user: "u-9", domain: "alarm")
                for ring in 1...6 {
                    try await translator.publisher.publish(Events.alarm("al-1", ring: ring, at: Self.base.addingTimeInterval(Double(ring))))
                }
                func rings() -> [(ring: Int64, priority: Int)] {
                    sender.simulator.deliveries(toDevice: token).compactMap { delivery in
                        guard case .integer(let ring)? = Self.aps(delivery)?["content-state"]?["ring"] else { return nil }
                        return (ring, delivery.priority)
                    }
                }
                let letters = try await DeadLetterPipelineTests.kept(translator.store, 2)
                #expect(letters.allSatisfy { $0.reason == "over-budget" && $0.source == .translator })
                #expect(Set(letters.compactMap(\.eventID)) == ["al-1-5", "al-1-6"])
                try await eventually("ring 4 delivered") { rings().contains { $0.ring == 4 } }
                let before = rings()
                #expect(before.filter { $0.ring <= 2 }.map(\.priority) == [10, 10], "\(before)")
                #expect(before.filter { $0.ring > 2 }.allSatisfy { $0.priority == 5 }, "\(before)")
                #expect(!before.contains { $0.ring > 4 })
                let spent = try #require(try await translator.store.activity(id: "al-1")).budget.spent
                #expect(spent == 4, "the two at 10 and the two downgraded; nothing for the letters")

                let replay = DeadLetterPipelineTests.replay(translator.store, translator.control, translator.topology)
                let summary = try await replay.run(matching: .init(), limit: 10, force: false, dryRun: false) { _ in }
                #expect(summary.replayed == 2)
                try await eventually("ring 6 delivered") { rings().contains { $0.ring == 6 } }
                #expect(rings().filter { $0.ring > 4 }.allSatisfy { $0.priority == 5 }, "\(rings())")
                #expect(try await translator.store.activity(id: "al-1")?.budget.spent == spent, "a replay at 5 spends no budget")
                let trace = try await translator.store.trace(activityID: "al-1", limit: 100)
                #expect(trace.contains { $0.detail.contains("replayed with priority capped at 5") })
            }
        }
    }
}
