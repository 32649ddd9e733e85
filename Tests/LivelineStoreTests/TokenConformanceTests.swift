import Foundation
import LivelineCore
import LivelineStore
import LivelineStoreTestSupport
import Testing

@Suite("Tokens")
struct TokenConformanceTests {
    @Test(arguments: StoreKind.underTest)
    func registeringBeforeTheFirstEventCreatesAPendingRowOwnedByTheUser(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            #expect(try await store.registerUpdateToken(Fixtures.registration("r-1")) == .created(createdActivity: true))
            let activity = try #require(try await store.activity(id: "r-1"))
            #expect(activity.status == .pending)
            #expect(activity.userID == "u-1")
            #expect(activity.domain == "ride")
            #expect(activity.contentState == nil)
            #expect(try await store.registerUpdateToken(Fixtures.registration("r-1", user: "u-2")) == .ownedByAnotherUser)
            // Not started until a push starts it on a device: events before that age nothing.
            #expect(try await store.applyChanges([Fixtures.change("r-1", at: 1)]) == [.applied])
            #expect(try await store.activity(id: "r-1")?.startedAt == nil)
            #expect(try await store.applyChanges([Fixtures.change("r-1", at: 2, started: 2)]) == [.applied])
            #expect(try await store.activity(id: "r-1")?.startedAt == Fixtures.time(2))
        }
    }

    @Test(arguments: StoreKind.underTest)
    func aRotatedTokenReplacesOnlyThatDevicesToken(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            _ = try await store.applyChanges([Fixtures.change("r-1", at: 1)])
            #expect(try await store.registerUpdateToken(Fixtures.registration("r-1", device: "phone", token: Fixtures.token(1)))
                == .created(createdActivity: false))
            #expect(try await store.registerUpdateToken(Fixtures.registration("r-1", device: "watch", token: Fixtures.token(2)))
                == .created(createdActivity: false))
            #expect(try await store.registerUpdateToken(
                Fixtures.registration("r-1", device: "phone", token: Fixtures.token(3), at: 5)) == .replaced)
            let request = SnapshotRequest(activityID: "r-1", userID: "u-1", attributesType: "RideAttributes")
            let tokens = try #require(try await store.loadSnapshots([request])["r-1"]).updateTokens
            #expect(tokens.map(\.token) == [Fixtures.token(3), Fixtures.token(2)])
            #expect(tokens.first?.registeredAt == Fixtures.time(5))
        }
    }

    @Test(arguments: StoreKind.underTest)
    func endedAndForeignActivitiesRefuseTokens(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            _ = try await store.applyChanges([Fixtures.change("ended", at: 1, end: "completed"), Fixtures.change("theirs", at: 1, user: "u-2")])
            #expect(try await store.registerUpdateToken(Fixtures.registration("ended")) == .activityEnded)
            #expect(try await store.registerUpdateToken(Fixtures.registration("theirs")) == .ownedByAnotherUser)
        }
    }

    @Test(arguments: StoreKind.underTest)
    func removingAnUpdateToken(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            _ = try await store.registerUpdateToken(Fixtures.registration("r-1"))
            #expect(try await store.removeUpdateToken(activityID: "r-1", deviceID: "d-1", userID: "u-2") == .ownedByAnotherUser)
            #expect(try await store.removeUpdateToken(activityID: "r-1", deviceID: "d-1", userID: "u-1") == .removed)
            #expect(try await store.removeUpdateToken(activityID: "r-1", deviceID: "d-1", userID: "u-1") == .notFound)
            #expect(try await store.removeUpdateToken(activityID: "nope", deviceID: "d-1", userID: "u-1") == .notFound)
        }
    }

    @Test(arguments: StoreKind.underTest)
    func aPushToStartTokenServesUntilTheAppReplacesIt(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            let token = PushToStartToken(userID: "u-1", attributesType: "RideAttributes", token: Fixtures.token(1), registeredAt: Fixtures.time(0))
            try await store.registerPushToStartToken(token)
            let request = SnapshotRequest(activityID: "x", userID: "u-1", attributesType: "RideAttributes")
            let other = SnapshotRequest(activityID: "y", userID: "u-1", attributesType: "RideAttributes")
            // Every activity of the type sees it, as often as it is read.
            for _ in 0..<2 {
                let loaded = try await store.loadSnapshots([request, other])
                #expect(loaded["x"]?.pushToStartTokens.map(\.token) == [Fixtures.token(1)])
                #expect(loaded["y"]?.pushToStartTokens.map(\.token) == [Fixtures.token(1)])
            }
            // The app's new token replaces it.
            try await store.registerPushToStartToken(
                PushToStartToken(userID: "u-1", attributesType: "RideAttributes", token: Fixtures.token(2), registeredAt: Fixtures.time(3)))
            #expect(try await store.loadSnapshots([request])["x"]?.pushToStartTokens.map(\.token) == [Fixtures.token(2)])
            #expect(try await store.removePushToStartTokens(userID: "u-1", attributesType: "RideAttributes", deviceID: nil) == 1)
            #expect(try await store.removePushToStartTokens(userID: "u-1", attributesType: "RideAttributes", deviceID: nil) == 0)
        }
    }

    /// One token per device: each of a user's devices can be started, and a device's new
    /// token replaces only that device's.
    @Test(arguments: StoreKind.underTest)
    func eachDeviceHasItsOwnPushToStartToken(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            for (device, token) in [("phone", 1), ("ipad", 2)] {
                try await store.registerPushToStartToken(PushToStartToken(
                    userID: "u-1", attributesType: "T", deviceID: device, token: Fixtures.token(token),
                    registeredAt: Fixtures.time(0), environment: token == 2 ? .sandbox : .production,
                    osVersion: token == 2 ? "17.4" : nil))
            }
            let request = SnapshotRequest(activityID: "x", userID: "u-1", attributesType: "T")
            var tokens = try #require(try await store.loadSnapshots([request])["x"]?.pushToStartTokens)
            #expect(tokens.map(\.deviceID) == ["ipad", "phone"])
            #expect(tokens.map(\.token) == [Fixtures.token(2), Fixtures.token(1)])
            #expect(tokens[0].environment == .sandbox && tokens[0].osVersion == "17.4")
            #expect(tokens[1].environment == .production && tokens[1].osVersion == nil)

            try await store.registerPushToStartToken(PushToStartToken(
                userID: "u-1", attributesType: "T", deviceID: "phone", token: Fixtures.token(4), registeredAt: Fixtures.time(2)))
            tokens = try #require(try await store.loadSnapshots([request])["x"]?.pushToStartTokens)
            #expect(tokens.map(\.token) == [Fixtures.token(2), Fixtures.token(4)])

            #expect(try await store.removePushToStartTokens(userID: "u-1", attributesType: "T", deviceID: "ipad") == 1)
            #expect(try await store.removePushToStartTokens(userID: "u-1", attributesType: "T", deviceID: "ipad") == 0)
            #expect(try await store.loadSnapshots([request])["x"]?.pushToStartTokens.map(\.deviceID) == ["phone"])
        }
    }

    /// Each token keeps the locale and content-state version its app registered, through the
    /// snapshot, the audience and a re-registration; the store counts them per type, and tells
    /// the oldest version a type's push-to-start tokens declared.
    @Test(arguments: StoreKind.underTest)
    func eachTokenKeepsTheLocaleAndVersionItsAppRegistered(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            var german = Fixtures.registration("r-1", device: "phone", token: Fixtures.token(1))
            german.locale = "de-AT"
            german.contentVersion = 2
            _ = try await store.registerUpdateToken(german)
            _ = try await store.registerUpdateToken(Fixtures.registration("r-1", device: "watch", token: Fixtures.token(2)))
            try await store.registerPushToStartToken(PushToStartToken(
                userID: "u-1", attributesType: "RideAttributes", deviceID: "phone", token: Fixtures.token(3),
                registeredAt: Fixtures.time(0), locale: "pt-BR", contentVersion: 1))
            try await store.registerPushToStartToken(PushToStartToken(
                userID: "u-2", attributesType: "RideAttributes", deviceID: "phone", token: Fixtures.token(4),
                registeredAt: Fixtures.time(0), locale: "pt-BR", contentVersion: 3))
            _ = try await store.follow(userID: "u-1", topic: "team:ars", at: Fixtures.time(0))

            let request = SnapshotRequest(activityID: "r-1", userID: "u-1", attributesType: "RideAttributes")
            let stored = try #require(try await store.loadSnapshots([request])["r-1"])
            #expect(stored.updateTokens.map(\.locale) == ["de-AT", nil])
            #expect(stored.updateTokens.map(\.contentVersion) == [2, nil])
            #expect(stored.pushToStartTokens.map(\.locale) == ["pt-BR"])
            #expect(stored.pushToStartTokens.map(\.contentVersion) == [1])
            let audience = try await store.audience(topics: ["team:ars"], attributesType: "RideAttributes")
            #expect(audience.map(\.locale) == ["pt-BR"])
            #expect(audience.map(\.contentVersion) == [1])

            #expect(try await store.oldestContentVersion(attributesType: "RideAttributes") == 1)
            #expect(try await store.oldestContentVersion(attributesType: "ScoreAttributes") == nil)
            #expect(try await store.tokenRegistrations(attributesType: "RideAttributes") == [
                TokenRegistrations(attributesType: "RideAttributes", kind: .pushToStart, contentVersion: 1, locale: "pt-BR", devices: 1),
                TokenRegistrations(attributesType: "RideAttributes", kind: .pushToStart, contentVersion: 3, locale: "pt-BR", devices: 1),
                TokenRegistrations(attributesType: "RideAttributes", kind: .update, contentVersion: nil, locale: nil, devices: 1),
                TokenRegistrations(attributesType: "RideAttributes", kind: .update, contentVersion: 2, locale: "de-AT", devices: 1),
            ])
            #expect(try await store.tokenRegistrations(attributesType: "ScoreAttributes").isEmpty)
            #expect(try await store.tokenRegistrations(attributesType: nil).count == 4)

            german.locale = nil
            german.contentVersion = nil
            #expect(try await store.registerUpdateToken(german) == .replaced)
            #expect(try await store.loadSnapshots([request])["r-1"]?.updateTokens.map(\.locale) == [nil, nil])
            #expect(try await store.loadSnapshots([request])["r-1"]?.updateTokens.map(\.contentVersion) == [nil, nil])
        }
    }

    /// Follows are per user and topic and idempotent; the audience of a set of topics is
    /// the token of the type on every device of every follower who has Live Activities on,
    /// once per device.
    @Test(arguments: StoreKind.underTest)
    func theAudienceIsEveryDeviceOfEveryFollowerWithLiveActivitiesOn(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            #expect(try await store.follow(userID: "u-1", topic: "team:ars", at: Fixtures.time(0)))
            #expect(try await store.follow(userID: "u-1", topic: "team:ars", at: Fixtures.time(1)) == false)
            #expect(try await store.follow(userID: "u-1", topic: "league:epl", at: Fixtures.time(2)))
            #expect(try await store.follow(userID: "u-2", topic: "team:che", at: Fixtures.time(3)))
            #expect(try await store.follow(userID: "u-3", topic: "team:liv", at: Fixtures.time(3)))
            #expect(try await store.follows(userID: "u-1") == [
                Follow(topic: "league:epl", followedAt: Fixtures.time(2)), Follow(topic: "team:ars", followedAt: Fixtures.time(0)),
            ])
            let devices = [("u-1", "a", 1), ("u-1", "b", 2), ("u-2", "a", 3), ("u-3", "a", 4)]
            for (user, device, token) in devices {
                try await store.registerPushToStartToken(PushToStartToken(
                    userID: user, attributesType: "ScoreAttributes", deviceID: device, token: Fixtures.token(token),
                    registeredAt: Fixtures.time(0)))
            }
            try await store.registerPushToStartToken(PushToStartToken(
                userID: "u-2", attributesType: "RideAttributes", deviceID: "a", token: Fixtures.token(5), registeredAt: Fixtures.time(0)))
            try await store.registerPushToStartToken(PushToStartToken(
                userID: "u-2", attributesType: "ScoreAttributes", deviceID: "b", token: Fixtures.token(6), registeredAt: Fixtures.time(0)))

            // u-1 follows two of the topics and still counts once per device; u-2's ride token
            // is left out; u-3 follows none of them.
            let topics = ["team:ars", "team:che", "league:epl"]
            let audience = try await store.audience(topics: topics, attributesType: "ScoreAttributes")
            #expect(audience.map { "\($0.userID)/\($0.deviceID)" } == ["u-1/a", "u-1/b", "u-2/a", "u-2/b"])
            #expect(audience.map(\.token) == [Fixtures.token(1), Fixtures.token(2), Fixtures.token(3), Fixtures.token(6)])
            // Read in pages, each from just after the last device of the one before.
            let first = try await store.audience(topics: topics, attributesType: "ScoreAttributes", of: nil, after: nil, limit: 3)
            #expect(first == Array(audience.prefix(3)))
            let second = try await store.audience(
                topics: topics, attributesType: "ScoreAttributes", of: nil, after: AudiencePosition(after: first[2]), limit: 3)
            #expect(second == [audience[3]])
            #expect(try await store.audience(
                topics: topics, attributesType: "ScoreAttributes", of: nil, after: AudiencePosition(after: second[0]), limit: 3).isEmpty)
            // A follower who turns Live Activities off is left out until turning them on again.
            try await store.setPreferences(UserPreferences(activitiesEnabled: false, frequentPushesEnabled: false), userID: "u-2")
            #expect(try await store.audience(topics: topics, attributesType: "ScoreAttributes").map(\.userID) == ["u-1", "u-1"])
            try await store.setPreferences(UserPreferences(activitiesEnabled: true, frequentPushesEnabled: false), userID: "u-2")
            #expect(try await store.audience(topics: topics, attributesType: "ScoreAttributes").count == 4)
            #expect(try await store.audience(topics: [], attributesType: "ScoreAttributes").isEmpty)

            #expect(try await store.unfollow(userID: "u-1", topic: "team:ars"))
            #expect(try await store.unfollow(userID: "u-1", topic: "team:ars") == false)
            #expect(try await store.audience(topics: ["team:ars"], attributesType: "ScoreAttributes").isEmpty)
        }
    }

    @Test(arguments: StoreKind.underTest)
    func unregisteredTokensAreKeptIfRegisteredAgainAfterTheTimestamp(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            _ = try await store.registerUpdateToken(Fixtures.registration("old", token: Fixtures.token(1), at: 10))
            _ = try await store.registerUpdateToken(Fixtures.registration("new", token: Fixtures.token(1), at: 30))
            try await store.registerPushToStartToken(
                PushToStartToken(userID: "u-1", attributesType: "RideAttributes", token: Fixtures.token(1), registeredAt: Fixtures.time(5)))
            #expect(try await store.deleteToken(Fixtures.token(1), registeredBefore: Fixtures.time(20)) == 2)
            let snapshots = try await store.loadSnapshots([
                SnapshotRequest(activityID: "old", userID: "u-1", attributesType: "RideAttributes"),
                SnapshotRequest(activityID: "new", userID: "u-1", attributesType: "RideAttributes"),
            ])
            #expect(snapshots["old"]?.updateTokens == [])
            #expect(snapshots["new"]?.updateTokens.count == 1)
            #expect(snapshots["new"]?.pushToStartTokens == [])
            #expect(try await store.deleteToken(Fixtures.token(1), registeredBefore: Fixtures.time(30)) == 0)
        }
    }

    @Test(arguments: StoreKind.underTest)
    func badTokensAreDeletedEverywhere(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            _ = try await store.registerUpdateToken(Fixtures.registration("a", token: Fixtures.token(4)))
            _ = try await store.registerUpdateToken(Fixtures.registration("b", token: Fixtures.token(4)))
            _ = try await store.registerUpdateToken(Fixtures.registration("c", token: Fixtures.token(5)))
            try await store.registerPushToStartToken(
                PushToStartToken(userID: "u-1", attributesType: "T", token: Fixtures.token(4), registeredAt: Fixtures.time(0)))
            #expect(try await store.deleteToken(Fixtures.token(4)) == 3)
            #expect(try await store.deleteToken(Fixtures.token(4)) == 0)
            let c = SnapshotRequest(activityID: "c", userID: "u-1", attributesType: "T")
            #expect(try await store.loadSnapshots([c])["c"]?.updateTokens.count == 1)
        }
    }

    @Test(arguments: StoreKind.underTest)
    func preferencesDefaultAndReplace(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            #expect(try await store.preferences(userID: "u-1") == .defaults)
            let off = UserPreferences(activitiesEnabled: false, frequentPushesEnabled: true)
            try await store.setPreferences(off, userID: "u-1")
            #expect(try await store.preferences(userID: "u-1") == off)
            try await store.setPreferences(.defaults, userID: "u-1")
            #expect(try await store.preferences(userID: "u-1") == .defaults)
            #expect(try await store.preferences(userID: "u-2") == .defaults)
        }
    }
}
