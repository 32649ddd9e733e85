import Foundation
import GRDB
import LivelineCore
import LivelineStore
import LivelineStoreTestSupport
import Testing

/// Forgetting a user removes everything that names them and keeps everyone else's, a shared
/// game they followed included.
@Suite("Erasure")
struct ErasureConformanceTests {
    static let forgotten = "u-forget"
    static let other = "u-stays"
    static let phone = Fixtures.token(0xF0)
    static let tablet = Fixtures.token(0xF1)
    static let subscription = Fixtures.token(0xF2)

    /// Two users with the same kinds of rows; a game both follow, owned by the league.
    static func fill(_ store: any ActivityStore) async throws {
        for (user, token, offset) in [(forgotten, phone, 0.0), (other, Fixtures.token(0xA0), 1.0)] {
            let ride = "ride-\(user)"
            _ = try await store.registerUpdateToken(Fixtures.registration(ride, user: user, token: token))
            _ = try await store.applyChanges([Fixtures.change(ride, at: 10 + offset, user: user, started: 10)], trace: [
                TraceEntry(activityID: ride, at: Fixtures.time(10), kind: .pushDecided, detail: "update for \(user)"),
            ])
            try await store.registerPushToStartToken(PushToStartToken(
                userID: user, attributesType: "ScoreAttributes", deviceID: "tablet", token: user == forgotten ? tablet : Fixtures.token(0xA1),
                registeredAt: Fixtures.time(0)))
            _ = try await store.follow(userID: user, topic: "team:ars", at: Fixtures.time(0))
            try await store.setPreferences(UserPreferences(activitiesEnabled: true, frequentPushesEnabled: true), userID: user)
            _ = try await store.keepDeadLetters([
                DeadLetterConformanceTests.letter("letter-\(user)", activity: ride, at: 20 + offset),
            ])
        }
        // The game is the league's; the forgotten user's old phone subscribed to it per token.
        _ = try await store.applyChanges([ActivityChange(
            activityID: "game", domain: "score", attributesType: "ScoreAttributes", userID: "league", contentState: "{}",
            eventTime: Fixtures.time(5))])
        _ = try await store.registerUpdateToken(UpdateTokenRegistration(
            activityID: "game", deviceID: "\(forgotten)/old-phone", userID: "league", token: subscription, domain: "score",
            attributesType: "ScoreAttributes", at: Fixtures.time(6)))
        _ = try await store.registerUpdateToken(UpdateTokenRegistration(
            activityID: "game", deviceID: "\(other)/old-phone", userID: "league", token: Fixtures.token(0xA2), domain: "score",
            attributesType: "ScoreAttributes", at: Fixtures.time(6)))
        // A letter of the game that carries the forgotten user's subscription token in its job.
        var letter = DeadLetterConformanceTests.letter("game-letter", domain: "score", activity: "game", at: 30)
        letter.body = Data(#"{"target":{"device":{"token":"\#(subscription)"}}}"#.utf8)
        _ = try await store.keepDeadLetters([letter])
    }

    @Test(arguments: StoreKind.underTest)
    func everythingThatNamesTheUserGoesAndTheSharedGameStays(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            try await Self.fill(store)
            #expect(try await store.liveActivities(ofUser: Self.forgotten).map(\.activityID) == ["ride-\(Self.forgotten)"])

            let erased = try await store.forgetUser(Self.forgotten, sharedDomains: ["score"])
            #expect(erased.activities == 1 && erased.updateTokens == 2 && erased.pushToStartTokens == 1, "\(erased)")
            #expect(erased.follows == 1 && erased.preferences == 1 && erased.traceLines == 1 && erased.deadLetters == 2, "\(erased)")
            #expect(try await store.forgetUser(Self.forgotten, sharedDomains: ["score"]) == UserErasure(), "idempotent")

            #expect(try await store.activity(id: "ride-\(Self.forgotten)") == nil)
            #expect(try await store.follows(userID: Self.forgotten).isEmpty)
            #expect(try await store.liveActivities(ofUser: Self.forgotten).isEmpty)
            let game = try #require(try await store.loadSnapshots([
                SnapshotRequest(activityID: "game", userID: "league", attributesType: "ScoreAttributes"),
            ])["game"])
            #expect(game.activity != nil, "the game stays")
            #expect(game.updateTokens.map(\.deviceID) == ["\(Self.other)/old-phone"], "without the forgotten user's subscription")
            #expect(try await store.deadLetter(id: "game-letter") == nil, "its job named the user's token")

            // Everyone else's rows are all there.
            #expect(try await store.activity(id: "ride-\(Self.other)") != nil)
            #expect(try await store.follows(userID: Self.other).count == 1)
            #expect(try await store.audience(topics: ["team:ars"], attributesType: "ScoreAttributes").map(\.userID) == [Self.other])
            #expect(try await store.deadLetter(id: "letter-\(Self.other)") != nil)
            #expect(try await store.trace(activityID: "ride-\(Self.other)", limit: 10).count == 1)
        }
    }

    /// Afterwards no row of any table holds the user id or any of their tokens.
    @Test func aSearchOfEveryTableFindsNothingOfTheUser() async throws {
        try await SQLiteTestDatabase.withPath { path in
            let store = try SQLiteLivelineStore(configuration: .init(path: path))
            try await Self.fill(store)
            _ = try await store.forgetUser(Self.forgotten, sharedDomains: ["score"])
            let reader = try DatabaseQueue(path: path)
            let found = try await reader.read { db in
                var found: [String] = []
                for table in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'") {
                    for row in try Row.fetchAll(db, sql: "SELECT * FROM \(table)") {
                        let text = row.databaseValues.map { value -> String in
                            switch value.storage {
                            case .string(let string): string
                            case .blob(let data): String(decoding: data, as: UTF8.self)
                            default: ""
                            }
                        }.joined(separator: " ")
                        for needle in [Self.forgotten, Self.phone, Self.tablet, Self.subscription] where text.contains(needle) {
                            found.append("\(table): \(needle)")
                        }
                    }
                }
                return found
            }
            #expect(found.isEmpty, "\(found)")
        }
    }
}
