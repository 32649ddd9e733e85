import Foundation
import LivelineCore
import LivelineStore
import LivelineStoreTestSupport
import Testing

/// A fan who follows a live game's topic after its start, or registers a new device then,
/// is queued once for a late start; the translators claim each once.
@Suite("Late starts")
struct LateStartConformanceTests {
    @Test(arguments: StoreKind.underTest)
    func followersAndDevicesAfterTheStartAreQueuedOnceAndClaimedOnce(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            try await Self.device(store, "u-1", "a", at: 0)
            _ = try await store.follow(userID: "u-1", topic: "team:ars", at: Fixtures.time(0))
            _ = try await store.applyChanges([Self.start("g-1", topics: ["team:ars", "league:epl"], at: 10)], trace: [])
            // Nothing is queued by the start itself: its audience got it.
            #expect(try await Self.claim(store).isEmpty)

            try await Self.device(store, "u-2", "a", at: 0)
            try await Self.device(store, "u-2", "b", at: 0)
            #expect(try await store.follow(userID: "u-2", topic: "team:ars", at: Fixtures.time(20)))
            // u-1 was in the audience through team:ars: a second topic of the game is no start.
            _ = try await store.follow(userID: "u-1", topic: "league:epl", at: Fixtures.time(25))
            // A second topic of the same game queues nothing more.
            _ = try await store.follow(userID: "u-2", topic: "league:epl", at: Fixtures.time(30))
            // A follower with no device yet is queued when the device comes; a refresh is not new.
            _ = try await store.follow(userID: "u-3", topic: "league:epl", at: Fixtures.time(22))
            try await Self.device(store, "u-3", "a", at: 40)
            // A new device of a follower who was in the audience was not in it.
            try await Self.device(store, "u-1", "c", at: 50)
            // A follower with Live Activities off is claimed and not started.
            try await Self.device(store, "u-4", "a", at: 0)
            try await store.setPreferences(UserPreferences(activitiesEnabled: false, frequentPushesEnabled: false), userID: "u-4")
            _ = try await store.follow(userID: "u-4", topic: "team:ars", at: Fixtures.time(23))

            // The start's audience read in pages after its first leaves the queued devices to
            // their late start, and another game's keeps them.
            let topics = ["team:ars", "league:epl"]
            let pages = try await store.audience(topics: topics, attributesType: "ScoreAttributes", of: "g-1", after: nil, limit: 100)
            #expect(pages.map { "\($0.userID)/\($0.deviceID)" } == ["u-1/a"])
            let other = try await store.audience(topics: topics, attributesType: "ScoreAttributes", of: "g-2", after: nil, limit: 100)
            #expect(other.map { "\($0.userID)/\($0.deviceID)" } == ["u-1/a", "u-1/c", "u-2/a", "u-2/b", "u-3/a"])

            #expect(try await Self.claim(store, limit: 2).map(\.description) == ["g-1 u-2/a", "g-1 u-2/b"])
            let rest = try await Self.claim(store)
            #expect(rest.map(\.description) == ["g-1 u-3/a", "g-1 u-1/c"])
            #expect(rest.first?.token.token == Fixtures.token(3 * 100 + 1))
            #expect(rest.map(\.token.locale) == [nil, "es-MX"], "a late start is in the device's language too")
            try await Self.device(store, "u-3", "a", at: 60)
            _ = try await store.follow(userID: "u-2", topic: "team:ars-women", at: Fixtures.time(61))
            #expect(try await Self.claim(store).isEmpty, "each device is claimed once; refreshes and other topics queue nothing")

            // Given back, a start is claimed again.
            try await store.releaseLateStarts(Array(rest.suffix(1)))
            #expect(try await Self.claim(store).map(\.description) == ["g-1 u-1/c"])
        }
    }

    @Test(arguments: StoreKind.underTest)
    func gamesThatEndedOrAgedStartNobody(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            for user in ["u-1", "u-2", "u-3"] { try await Self.device(store, user, "a", at: 0) }
            _ = try await store.applyChanges([
                Self.start("ended", topics: ["team:che"], at: 10), Self.start("aged", topics: ["team:liv"], at: 5),
            ], trace: [])
            _ = try await store.follow(userID: "u-1", topic: "team:che", at: Fixtures.time(15))
            _ = try await store.follow(userID: "u-2", topic: "team:liv", at: Fixtures.time(15))
            _ = try await store.applyChanges([Fixtures.change("ended", at: 60, end: "final")], trace: [])
            // Past the lifetime (started before `startedAfter`) or ended: dropped at the claim.
            #expect(try await Self.claim(store).isEmpty)
            _ = try await store.follow(userID: "u-3", topic: "team:che", at: Fixtures.time(70))
            #expect(try await Self.claim(store).isEmpty)
        }
    }

    static func claim(_ store: any ActivityStore, limit: Int = 10) async throws -> [LateStart] {
        try await store.claimLateStarts(now: Fixtures.time(100), startedAfter: Fixtures.time(8), limit: limit)
    }

    /// The user's device's push-to-start token for scores; its token is seeded by user and device.
    static func device(_ store: any ActivityStore, _ user: String, _ device: String, at seconds: Double) async throws {
        let seed = Int(user.dropFirst(2))! * 100 + Int(device.unicodeScalars.first!.value - 96)
        try await store.registerPushToStartToken(PushToStartToken(
            userID: user, attributesType: "ScoreAttributes", deviceID: device, token: Fixtures.token(seed),
            registeredAt: Fixtures.time(seconds), locale: device == "c" ? "es-MX" : nil))
    }

    /// A game's start for the followers of `topics`, whose audience was read at its time.
    static func start(_ id: String, topics: [String], at seconds: Double) -> ActivityChange {
        ActivityChange(
            activityID: id, domain: "score", attributesType: "ScoreAttributes", userID: "league",
            attributes: #"{"gameId":"\#(id)"}"#, contentState: #"{"status":"live"}"#, eventTime: Fixtures.time(seconds),
            pushToStartSentAt: Fixtures.time(seconds), startedAt: Fixtures.time(seconds),
            sharedStart: .init(topics: topics, audienceReadAt: Fixtures.time(seconds)))
    }
}

extension LateStart: CustomStringConvertible {
    public var description: String { "\(activityID) \(token.userID)/\(token.deviceID)" }
}
