import Foundation
import LivelineStore
import LivelineStoreTestSupport
import Testing

@Suite("Concurrent writers")
struct ConcurrencyConformanceTests {
    /// Two translators get overlapping batches for the same activities, each with its own
    /// event times; whatever the interleaving, every activity ends at the newest event.
    @Test(arguments: StoreKind.underTest)
    func conflictingBatchesKeepTheNewestEvent(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            let ids = (0..<60).map { "r-\($0)" }
            let rounds = 8
            func batch(writer: Int, round: Int) -> [ActivityChange] {
                // Writer 0 has even times, writer 1 odd ones; the order of ids differs too.
                let order = writer == 0 ? ids : ids.reversed()
                return order.map { Fixtures.change($0, at: Double(round * 2 + writer), state: #"{"w":\#(writer),"r":\#(round)}"#) }
            }
            let applied = try await withThrowingTaskGroup(of: Int.self) { group in
                for writer in 0..<2 {
                    group.addTask {
                        var applied = 0
                        for round in 0..<rounds {
                            applied += try await store.applyChanges(batch(writer: writer, round: round)).filter { $0 == .applied }.count
                        }
                        return applied
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(applied >= ids.count * rounds)
            let newest = Double((rounds - 1) * 2 + 1)
            for id in ids {
                let activity = try #require(try await store.activity(id: id))
                #expect(activity.lastEventAt == Fixtures.time(newest))
                #expect(activity.contentState == #"{"w":1,"r":\#(rounds - 1)}"#)
            }
        }
    }

    /// Two users race to register the same new activity: exactly one owns it, and only that
    /// user's tokens are stored.
    @Test(arguments: StoreKind.underTest)
    func racingRegistrationsSettleOneOwner(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            let activities = (0..<20).map { "race-\($0)" }
            let outcomes = try await withThrowingTaskGroup(of: TokenRegistrationOutcome.self) { group in
                for activity in activities {
                    for user in ["u-1", "u-2"] {
                        for device in ["phone", "watch"] {
                            group.addTask {
                                try await store.registerUpdateToken(
                                    Fixtures.registration(activity, device: "\(device)-\(user)", user: user))
                            }
                        }
                    }
                }
                return try await group.reduce(into: [TokenRegistrationOutcome]()) { $0.append($1) }
            }
            // Per activity: one owner's two devices stored, the other user's two refused.
            #expect(outcomes.filter { $0 == .ownedByAnotherUser }.count == activities.count * 2)
            #expect(outcomes.filter { $0 == .created(createdActivity: true) }.count == activities.count)
            for activity in activities {
                let owner = try #require(try await store.activity(id: activity)).userID
                let request = SnapshotRequest(activityID: activity, userID: owner, attributesType: "RideAttributes")
                let tokens = try #require(try await store.loadSnapshots([request])[activity]).updateTokens
                #expect(tokens.count == 2)
                #expect(tokens.allSatisfy { $0.deviceID.hasSuffix(owner) })
            }
        }
    }
}
