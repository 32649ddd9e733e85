import Foundation
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
            #expect(try await store.applyChanges([Fixtures.change("r-1", at: 1)]) == [.applied])
            #expect(try await store.activity(id: "r-1")?.startedAt == Fixtures.time(1))
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
    func aPushToStartTokenIsUsedOnce(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            let token = PushToStartToken(userID: "u-1", attributesType: "RideAttributes", token: Fixtures.token(1), registeredAt: Fixtures.time(0))
            try await store.registerPushToStartToken(token)
            #expect(try await store.markPushToStartTokenUsed(userID: "u-1", attributesType: "RideAttributes", token: Fixtures.token(9), at: Fixtures.time(1)) == false)
            #expect(try await store.markPushToStartTokenUsed(userID: "u-1", attributesType: "RideAttributes", token: Fixtures.token(1), at: Fixtures.time(1)))
            #expect(try await store.markPushToStartTokenUsed(userID: "u-1", attributesType: "RideAttributes", token: Fixtures.token(1), at: Fixtures.time(2)) == false)
            let request = SnapshotRequest(activityID: "x", userID: "u-1", attributesType: "RideAttributes")
            let used = try #require(try await store.loadSnapshots([request])["x"]?.pushToStartToken)
            #expect(used.usedAt == Fixtures.time(1))
            #expect(!used.isUsable)
            // The app registering a fresh token makes starts possible again.
            try await store.registerPushToStartToken(
                PushToStartToken(userID: "u-1", attributesType: "RideAttributes", token: Fixtures.token(2), registeredAt: Fixtures.time(3)))
            #expect(try await store.loadSnapshots([request])["x"]?.pushToStartToken?.isUsable == true)
            #expect(try await store.removePushToStartToken(userID: "u-1", attributesType: "RideAttributes"))
            #expect(try await store.removePushToStartToken(userID: "u-1", attributesType: "RideAttributes") == false)
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
            #expect(snapshots["new"]?.pushToStartToken == nil)
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
