import Foundation
import LivelineCore
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
            #expect(new.pushToStartTokens == [start])
            #expect(new.preferences == .defaults)
            #expect(snapshots["other"]?.pushToStartTokens == [])
        }
    }

    /// The SQLite store passes a batch's keys as one JSON array; keys that need escaping in
    /// JSON must come back as themselves.
    @Test(arguments: StoreKind.underTest)
    func keysThatNeedEscapingInJSONAreFound(kind: StoreKind) async throws {
        let ids = [#"r-"quoted""#, #"r-back\slash"#, "r-line\nbreak\u{1}", "r-ünï-😀", "r-[,]"]
        try await kind.withStore { (store: any ActivityStore) async throws in
            _ = try await store.applyChanges(ids.map { Fixtures.change($0, at: 1, user: "u-\($0)") })
            for id in ids {
                _ = try await store.registerUpdateToken(Fixtures.registration(id, user: "u-\(id)", token: Fixtures.token(3), at: 2))
                try await store.registerPushToStartToken(PushToStartToken(
                    userID: "u-\(id)", attributesType: "RideAttributes", token: Fixtures.token(4), registeredAt: Fixtures.time(0)))
            }
            let snapshots = try await store.loadSnapshots(ids.map {
                SnapshotRequest(activityID: $0, userID: "u-\($0)", attributesType: "RideAttributes")
            })
            for id in ids {
                let snapshot = try #require(snapshots[id], "\(id)")
                #expect(snapshot.activity?.userID == "u-\(id)")
                #expect(snapshot.updateTokens.map(\.token) == [Fixtures.token(3)])
                #expect(snapshot.pushToStartTokens.map(\.token) == [Fixtures.token(4)])
            }
            // The same keys, as pairs: a second change by the owner keeps the owner's token.
            let outcomes = try await store.applyChanges(ids.map { Fixtures.change($0, at: 2, user: "u-\($0)") })
            #expect(outcomes == Array(repeating: .applied, count: ids.count))
            #expect(try await store.loadSnapshots([SnapshotRequest(
                activityID: ids[0], userID: "u-\(ids[0])", attributesType: "RideAttributes")])[ids[0]]?.updateTokens.count == 1)
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
    func tokensKeepTheEnvironmentTheyWereRegisteredWith(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            var sandbox = Fixtures.registration("r-1", device: "dev-build", token: Fixtures.token(1), at: 1)
            sandbox.environment = .sandbox
            _ = try await store.registerUpdateToken(sandbox)
            _ = try await store.registerUpdateToken(Fixtures.registration("r-1", device: "phone", token: Fixtures.token(2), at: 2))
            try await store.registerPushToStartToken(PushToStartToken(
                userID: "u-1", attributesType: "RideAttributes", token: Fixtures.token(3), registeredAt: Fixtures.time(3),
                environment: .sandbox))
            let request = SnapshotRequest(activityID: "r-1", userID: "u-1", attributesType: "RideAttributes")
            var snapshot = try #require(try await store.loadSnapshots([request])["r-1"])
            #expect(snapshot.updateTokens.map(\.environment) == [.sandbox, .production])
            #expect(snapshot.pushToStartTokens.map(\.environment) == [.sandbox])

            // A rotation from a production build moves the device to production.
            sandbox.token = Fixtures.token(4)
            sandbox.environment = .production
            _ = try await store.registerUpdateToken(sandbox)
            snapshot = try #require(try await store.loadSnapshots([request])["r-1"])
            #expect(snapshot.updateTokens.map(\.environment) == [.production, .production])
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
