import Foundation
import LivelineCodecs
import LivelineCore
import LivelineModels
import Testing

/// Content-states each installed app can decode: a device whose app was built with an older
/// model gets the state in that model's form, or nothing when that form cannot show it.
@Suite("Content-state versions")
struct ContentStateVersionTests {
    /// The ride content-state of version 1 apps, kept here as the old app: no `arriving`
    /// and no distance. ActivityKit decodes with `JSONDecoder`, as this test does.
    struct RideStateV1: Decodable {
        enum Status: String, Decodable { case driverAssigned, driverEnRoute, driverArrived, inProgress, completed, cancelled, failed }
        var driverName: String
        var driverPhoto: String
        var vehicleDescription: String
        var etaStartSeconds: Int
        var etaEndSeconds: Int
        var status: Status
    }

    /// The score content-state of version 1 apps: no intermission, and `lastPlay` required.
    struct ScoreStateV1: Decodable {
        enum Status: String, Decodable { case scheduled, live, halftime, final, postponed, cancelled }
        var homeScore: Int
        var awayScore: Int
        var period: String
        var clock: String
        var status: Status
        var lastPlay: String
    }

    static let oldToken = Fixtures.tokenA
    static let newToken = Fixtures.tokenB

    static func contentState(of job: PushJob) throws -> Data {
        let state = try #require(try JSONValue.parse(job.payload)["aps"]?["content-state"])
        return JSONValue.encoded(state)
    }

    static func job(for token: String, in send: TranslationDecision.Send) throws -> PushJob {
        try #require(send.jobs.first { $0.target == .device(token: token, kind: .update) })
    }

    /// A ride becomes `arriving`, which version 1 apps do not know: the old device gets it as
    /// `inProgress` without the distance, and decodes it; the current device gets it as is,
    /// which the old app could not have decoded.
    @Test func aNewCaseIsShownToTheOlderAppAsTheCaseItKnows() throws {
        var run = ActivityRun()
        run.tokens.contentVersions = [Self.oldToken: 1]
        _ = try run.apply("ride-assigned")
        var event = try Fixtures.event("ride-eta-tick")
        event.contentState = try #require(Self.with(event.contentState, ["status": .string("arriving")]))
        event.status = "arriving"
        let send = try Fixtures.sent(run.apply(event))

        let old = try Self.contentState(of: Self.job(for: Self.oldToken, in: send))
        let decoded = try JSONDecoder().decode(RideStateV1.self, from: old)
        #expect(decoded.status == .inProgress)
        #expect(try JSONValue.parse(old)["distanceRemaining"] == nil, "a field the old app never had is left out")

        let current = try Self.contentState(of: Self.job(for: Self.newToken, in: send))
        #expect(try JSONDecoder().decode(RideAttributes.ContentState.self, from: current).status == .arriving)
        #expect(throws: DecodingError.self, "the reason for all this: the old app cannot decode the current state") {
            try JSONDecoder().decode(RideStateV1.self, from: current)
        }
        #expect(send.jobsByVersion == [1: 1, 2: 1])
        #expect(send.incompatible == 0)
    }

    /// A state the older form can show unchanged is still sent in that form (without the
    /// distance), and a device that declared no version, or a newer one, gets the current.
    @Test func everyDeviceGetsTheNewestVersionItDecodes() throws {
        let tokens = (0..<4).map { String(repeating: String($0), count: 64) }
        var run = ActivityRun()
        run.tokens = TokenSnapshot(updateTokens: tokens, contentVersions: [tokens[0]: 1, tokens[1]: 2, tokens[2]: 7])
        _ = try run.apply("ride-assigned")
        let send = try Fixtures.sent(run.apply("ride-arrived"))
        let states = try send.jobs.map { try JSONValue.parse(Self.contentState(of: $0)) }
        #expect(states.count == 4)
        #expect(states[0]["distanceRemaining"] == nil && states[0]["status"] == .string("driverArrived"))
        for state in states.dropFirst() { #expect(state["distanceRemaining"] != nil) }
        #expect(send.jobsByVersion == [1: 1, 2: 3])
    }

    /// Score version 1 required `lastPlay` and knew no intermission.
    @Test func aFieldThatWasRequiredGetsItsDefault() throws {
        var run = ActivityRun()
        run.tokens = TokenSnapshot(updateTokens: [Self.oldToken], contentVersions: [Self.oldToken: 1])
        let domains = Fixtures.configuration.domains.map { domain in
            var domain = domain
            if domain.name == "score" { domain.delivery = .deviceTokens; domain.shared = false }
            return domain
        }
        run.translator = Translator(configuration: TranslatorConfiguration(domains: domains))
        var event = try Fixtures.event("score-scheduled")
        event.contentState = try #require(Self.with(event.contentState, ["status": .string("intermission")]))
        event.status = "intermission"
        let send = try Fixtures.sent(run.apply(event))
        let state = try JSONDecoder().decode(ScoreStateV1.self, from: Self.contentState(of: Self.job(for: Self.oldToken, in: send)))
        #expect(state.status == .halftime)
        #expect(state.lastPlay == "")
    }

    /// A generic domain whose version 2 added a `diverted` phase that version 1 cannot show.
    static let flights: Translator = {
        var flight = Fixtures.flight
        flight.contentStates = ContentStateVersions(current: 2, older: [
            ContentStateVersion(1, changes: [.addedCase(field: "phase", value: "Diverted", shownAs: nil), .addedField("progress")]),
        ])
        return Translator(configuration: TranslatorConfiguration(domains: [flight]))
    }()

    static func diverted(_ run: inout ActivityRun) throws -> TranslationDecision {
        _ = run.apply(try flights.parse(Fixtures.eventBody("flight-boarding")))
        var event = try flights.parse(Fixtures.eventBody("flight-departed"))
        event.contentState = try #require(Self.with(event.contentState, ["phase": .string("Diverted")]))
        return run.apply(event)
    }

    /// A state an older app cannot show is not sent to its devices: traced and counted. When
    /// no device can take it, the event is dropped as `incompatibleVersion`, its state kept.
    @Test func aStateTheOlderAppCannotShowIsNotSentToIt() throws {
        var run = ActivityRun(translator: Self.flights)
        run.tokens.contentVersions = [Self.oldToken: 1]
        let send = try Fixtures.sent(Self.diverted(&run))
        #expect(send.jobs.map(\.target) == [.device(token: Self.newToken, kind: .update)])
        #expect(send.incompatible == 1)
        #expect(send.traceNotes.contains { $0.hasPrefix("incompatible-version: not sent to update token a1b2c3d4…") && $0.contains("phase 'Diverted'") },
                "\(send.traceNotes)")

        var allOld = ActivityRun(translator: Self.flights)
        allOld.tokens.contentVersions = [Self.oldToken: 1, Self.newToken: 1]
        guard case .drop(let drop) = try Self.diverted(&allOld) else {
            Issue.record("expected a drop")
            return
        }
        #expect(drop.reason == .incompatibleVersion)
        #expect(drop.newSnapshot?.lastContentState?["phase"] == .string("Diverted"), "the state is kept")
        #expect(drop.traceNotes.contains { $0.hasPrefix("incompatible-version: not sent to 2 devices") })

        var older = ActivityRun(translator: Self.flights)
        older.tokens.contentVersions = [Self.oldToken: 0]
        let boarding = try Fixtures.sent(older.apply(try Self.flights.parse(Fixtures.eventBody("flight-boarding"))))
        #expect(boarding.jobs.count == 1 && boarding.incompatible == 1, "a version older than any declared gets nothing")
    }

    /// A game with a version 1 and a version 2 fan. `perToken`: the old device is started
    /// without the channel (it is then updated per token in its form), and the channel carries
    /// the current state. `oldest`: both listen, and the channel carries version 1's form.
    @Test func aChannelServesOlderAppsAsTheDomainChooses() throws {
        var start = try Fixtures.event("score-scheduled")
        start.topics = ["team:ars"]
        var intermission = try Fixtures.event("score-goal")
        intermission.contentState = try #require(Self.with(intermission.contentState, ["status": .string("intermission")]))
        intermission.status = "intermission"
        let audience = TokenSnapshot(
            channelID: "Y2hhbm5lbA==", audience: [Self.oldToken, Self.newToken], contentVersions: [Self.oldToken: 1])

        var perToken = ActivityRun()
        perToken.tokens = audience
        let started = try Fixtures.sent(perToken.apply(start))
        let channelOf = { (job: PushJob) in try JSONValue.parse(job.payload)["aps"]?["input-push-channel"] }
        #expect(try started.jobs.map(channelOf) == [.string("Y2hhbm5lbA=="), nil])
        #expect(started.jobs.last?.target == .device(token: Self.oldToken, kind: .pushToStart))
        _ = try JSONDecoder().decode(ScoreStateV1.self, from: Self.contentState(of: try #require(started.jobs.last)))
        perToken.tokens = TokenSnapshot(updateTokens: [Self.oldToken], channelID: "Y2hhbm5lbA==", contentVersions: [Self.oldToken: 1])
        let update = try Fixtures.sent(perToken.apply(intermission))
        #expect(update.jobs.map(\.target) == [.channel(key: "g-77"), .device(token: Self.oldToken, kind: .update)])
        #expect(try JSONValue.parse(Self.contentState(of: update.jobs[0]))["status"] == .string("intermission"))
        #expect(try JSONDecoder().decode(ScoreStateV1.self, from: Self.contentState(of: update.jobs[1])).status == .halftime)

        let domains = Fixtures.configuration.domains.map { domain in
            var domain = domain
            if domain.name == "score" { domain.channel.olderContentStates = .oldest }
            return domain
        }
        var oldest = ActivityRun(translator: Translator(configuration: TranslatorConfiguration(domains: domains)))
        oldest.tokens = audience
        let both = try Fixtures.sent(oldest.apply(start))
        #expect(try both.jobs.map(channelOf) == [.string("Y2hhbm5lbA=="), .string("Y2hhbm5lbA==")], "every device listens")
        oldest.tokens = TokenSnapshot(channelID: "Y2hhbm5lbA==", channelContentVersion: 1)
        let broadcast = try Fixtures.sent(oldest.apply(intermission))
        #expect(broadcast.jobs.map(\.target) == [.channel(key: "g-77")])
        #expect(try JSONDecoder().decode(ScoreStateV1.self, from: Self.contentState(of: broadcast.jobs[0])).status == .halftime)
        #expect(broadcast.jobsByVersion == [1: 1])
    }

    /// The Swift models' declarations hold; a domain file's are checked when it is read.
    @Test func declarationsAreCheckedWhenTheyAreRead() throws {
        for domain in TranslatorConfiguration.standard(bundleId: Fixtures.bundleId).domains {
            #expect(domain.versionProblem == nil, "\(domain.name)")
        }
        #expect(DomainConfiguration(name: "ride", kind: .ride, attributesType: "RideAttributes", bundleId: "b", policy: DomainPolicy())
            .contentStates.current == RideAttributes.ContentState.contentStateVersion)

        func problem(_ versions: String, kind: String = "generic") -> String? {
            Fixtures.problem(reading: #"{"name": "flight", "kind": "\#(kind)", "attributesType": "FlightAttributes", "bundleId": "b", "contentStateVersions": \#(versions)}"#)
        }
        #expect(problem(#"{"current": 3, "older": [{"version": 2, "changes": [{"addedField": "gate"}]}]}"#) == nil)
        #expect(problem(#"{"current": 2, "older": [{"version": 2, "changes": []}]}"#)?.contains("version 2 must be 1 or more and lower than 2") == true)
        #expect(problem(#"{"current": 3, "older": [{"version": 1, "changes": []}, {"version": 2, "changes": []}]}"#)?
            .contains("list versions newest first") == true)
        #expect(problem(#"{"current": 3, "older": [{"version": 2, "changes": [{"addedCase": "Diverted", "in": "phase", "shownAs": "Landed"}]},"#
            + #"{"version": 1, "changes": [{"addedCase": "Landed", "in": "phase", "shownAs": "Diverted"}]}]}"#)?
            .contains("shows 'Landed' as 'Diverted', which version 1 of phase does not have") == true)
        #expect(problem(#"{"current": 2, "older": [{"version": 1, "changes": [{"renamed": "gate"}]}]}"#)?
            .contains("addedCase (with in), addedField or madeOptional (with default)") == true)
        #expect(problem(#"{"current": 2, "older": [{"version": 1, "changes": [{"madeOptional": "gate"}]}]}"#) != nil, "a default is required")
        #expect(problem(#"{"current": 2}"#, kind: "ride")?.contains("declared next to its Swift model") == true)

        // A Swift model's case is typed; its cases are still checked against the enum.
        let bad = ContentStateVersions(current: 2, older: [ContentStateVersion(1, changes: [
            .addedCase(field: "status", value: "teleported", shownAs: "inProgress"),
        ])])
        var ride = DomainConfiguration(name: "ride", kind: .ride, attributesType: "RideAttributes", bundleId: "b", policy: DomainPolicy())
        ride.contentStates = bad
        #expect(ride.versionProblem == "version 1 names case 'teleported' of status, which the model does not have")
        bad.older[0].changes.forEach { #expect($0.field == "status") }
        ride.contentStates.older[0].changes = [.added(RideStatus.arriving, in: RideKeys.status, shownAs: .arriving)]
        #expect(ride.versionProblem == "version 1 shows 'arriving' as 'arriving', which version 1 of status does not have")
    }

    enum RideKeys: String, CodingKey { case status }

    static func with(_ state: JSONValue, _ changes: [String: JSONValue]) -> JSONValue? {
        guard case .object(var fields) = state else { return nil }
        fields.merge(changes) { $1 }
        return .object(fields)
    }
}
