import Foundation
import LivelineCore
import LivelineStore
import LivelineStoreTestSupport
import Testing

/// Retention removes each kind past its cutoff, batch by batch, and nothing live.
@Suite("Retention")
struct RetentionConformanceTests {
    static let cutoffs = RetentionCutoffs(
        traceBefore: Fixtures.time(1_000), activitiesBefore: Fixtures.time(1_000), pushToStartTokensBefore: Fixtures.time(1_000),
        deadLettersBefore: Fixtures.time(1_000), followsBefore: Fixtures.time(1_000))

    @Test(arguments: StoreKind.underTest)
    func eachKindGoesPastItsCutoffAndNothingLiveGoes(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            // Activities: (id, started, last event, ended)
            let activities: [(String, Double?, Double, Double?)] = [
                ("ended-old", 10, 20, 20), ("ended-live-channel", 10, 20, 20), ("ended-recent", 10, 2_000, 2_000),
                ("stopped-old", 10, 30, nil), ("announced-old", nil, 30, nil), ("live", 1_500, 1_600, nil),
            ]
            for (id, started, last, ended) in activities {
                _ = try await store.registerUpdateToken(Fixtures.registration(id, token: Fixtures.token(id.count)))
                _ = try await store.applyChanges([Fixtures.change(id, at: last, end: ended.map { _ in "done" }, started: started)])
                _ = try await store.createChannel(BroadcastChannel(domain: "ride", key: id, channelID: "ch-\(id)", createdAt: Fixtures.time(10)))
                if !["ended-live-channel", "live"].contains(id) {
                    _ = try await store.markChannelDeleted(domain: "ride", key: id, at: Fixtures.time(last))
                }
            }
            _ = try await store.registerUpdateToken(Fixtures.registration("pending", token: Fixtures.token(99)))

            // Push-to-start tokens and follows: u-old's token is stale, u-new's fresh; u-none has none.
            for (user, seconds) in [("u-old", 10.0), ("u-new", 2_000.0)] {
                try await store.registerPushToStartToken(PushToStartToken(
                    userID: user, attributesType: "ScoreAttributes", token: Fixtures.token(Int(seconds)), registeredAt: Fixtures.time(seconds)))
            }
            for (user, seconds) in [("u-old", 10.0), ("u-new", 10.0), ("u-none", 10.0), ("u-none-recent", 2_000.0)] {
                _ = try await store.follow(userID: user, topic: "team:ars", at: Fixtures.time(seconds))
            }
            _ = try await store.keepDeadLetters([
                DeadLetterConformanceTests.letter("old", at: 10), DeadLetterConformanceTests.letter("recent", at: 2_000),
            ])

            var total = PruneCounts()
            var batches = 0
            while true {
                let batch = try await store.prune(Self.cutoffs, limit: 2)
                total += batch
                batches += 1
                if !batch.byKind.contains(where: { $0.count >= 2 }) { break }
            }
            #expect(batches >= 2, "a batch of 2 at a time")
            #expect(total.activities == 4 && total.updateTokens == 4 && total.channels == 3, "\(total)")
            #expect(total.pushToStartTokens == 1 && total.deadLetters == 1 && total.follows == 2, "\(total)")

            for (id, _, _, _) in activities {
                let kept = ["ended-recent", "live"].contains(id)
                #expect((try await store.activity(id: id) != nil) == kept, "\(id)")
            }
            #expect(try await store.activity(id: "pending") != nil, "a pending registration waits for its first event")
            #expect(try await store.channel(domain: "ride", key: "ended-live-channel")?.deletedAt == nil,
                    "a channel still live at APNs is left to the sweeper")
            #expect(try await store.channel(domain: "ride", key: "ended-old") == nil)
            #expect(try await store.audience(topics: ["team:ars"], attributesType: "ScoreAttributes").map(\.userID) == ["u-new"])
            #expect(try await store.follows(userID: "u-none").isEmpty)
            #expect(try await store.follows(userID: "u-old").isEmpty)
            #expect(try await store.follows(userID: "u-none-recent").count == 1)
            #expect(try await store.deadLetter(id: "old") == nil)
            #expect(try await store.deadLetter(id: "recent") != nil)
            #expect(try await store.prune(Self.cutoffs, limit: 2).total == 0, "idempotent")
        }
    }
}
