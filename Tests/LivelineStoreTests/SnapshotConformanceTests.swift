import Foundation
import LivelineStore
import LivelineStoreTestSupport
import Testing

@Suite("Loading snapshots")
struct SnapshotConformanceTests {
    @Test(arguments: StoreKind.underTest)
    func anUnknownActivityStillCarriesTheUsersStartTokenAndPreferences(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            let start = PushToStartToken(
                userID: "u-1", attributesType: "RideAttributes", token: Fixtures.token(7), registeredAt: Fixtures.time(0))
            try await store.registerPushToStartToken(start)
            let snapshots = try await store.loadSnapshots([
                SnapshotRequest(activityID: "new", userID: "u-1", attributesType: "RideAttributes"),
                SnapshotRequest(activityID: "other", userID: "u-2", attributesType: "RideAttributes"),
            ])
            let new = try #require(snapshots["new"])
            #expect(new.activity == nil)
            #expect(new.updateTokens.isEmpty)
            #expect(new.pushToStartToken == start)
            #expect(new.preferences == .defaults)
            #expect(snapshots["other"]?.pushToStartToken == nil)
        }
    }

    @Test(arguments: StoreKind.underTest)
    func aSnapshotHoldsTheActivityItsTokensAndPreferences(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            _ = try await store.applyChanges([Fixtures.change("r-1", at: 1), Fixtures.change("r-2", at: 1)])
            _ = try await store.registerUpdateToken(Fixtures.registration("r-1", device: "watch", token: Fixtures.token(2), at: 2))
            _ = try await store.registerUpdateToken(Fixtures.registration("r-1", device: "phone", token: Fixtures.token(1), at: 3))
            let preferences = UserPreferences(activitiesEnabled: true, frequentPushesEnabled: true)
            try await store.setPreferences(preferences, userID: "u-1")
            let requests = (1...2).map { SnapshotRequest(activityID: "r-\($0)", userID: "u-1", attributesType: "RideAttributes") }
            let snapshots = try await store.loadSnapshots(requests + requests)
            #expect(snapshots.count == 2)
            let first = try #require(snapshots["r-1"])
            #expect(first.activity?.lastEventAt == Fixtures.time(1))
            #expect(first.updateTokens == [
                UpdateToken(activityID: "r-1", deviceID: "phone", token: Fixtures.token(1), registeredAt: Fixtures.time(3)),
                UpdateToken(activityID: "r-1", deviceID: "watch", token: Fixtures.token(2), registeredAt: Fixtures.time(2)),
            ])
            #expect(first.preferences == preferences)
            #expect(snapshots["r-2"]?.updateTokens == [])
        }
    }

    @Test(arguments: StoreKind.underTest)
    func anEmptyRequestLoadsNothing(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            #expect(try await store.loadSnapshots([]).isEmpty)
            #expect(try await store.applyChanges([]).isEmpty)
        }
    }
}
