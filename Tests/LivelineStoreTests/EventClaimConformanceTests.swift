import Foundation
import LivelineStore
import LivelineStoreTestSupport
import Testing

@Suite("Event claims")
struct EventClaimConformanceTests {
    /// An id is the producer's idempotency key: new ids are published, a retry of a
    /// confirmed one is not, a retry of one never confirmed is published again, and
    /// another body under a taken id is a conflict. Retention frees old ids.
    @Test(arguments: StoreKind.underTest)
    func claimsTellNewRetriedAndConflictingEventsApart(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            let first = [
                EventClaim(eventID: "e-1", producer: "rides", digest: "d1"),
                EventClaim(eventID: "e-2", producer: "rides", digest: "d2"),
            ]
            #expect(try await store.claimEvents(first, now: Fixtures.time(0)) == [.publish, .publish])
            try await store.markEventsPublished(["e-1"], now: Fixtures.time(1))

            let retry = [
                EventClaim(eventID: "e-1", producer: "rides", digest: "d1"),
                EventClaim(eventID: "e-2", producer: "rides", digest: "d2"),
                EventClaim(eventID: "e-1", producer: "rides", digest: "other"),
                EventClaim(eventID: "e-3", producer: "rides", digest: "d3"),
            ]
            // e-2 was claimed but never confirmed: its retry publishes it.
            #expect(try await store.claimEvents(retry, now: Fixtures.time(2)) == [.alreadyPublished, .publish, .conflict, .publish])
            try await store.markEventsPublished(["e-2", "e-3"], now: Fixtures.time(3))
            #expect(try await store.claimEvents([EventClaim(eventID: "e-2", producer: "rides", digest: "d2")], now: Fixtures.time(4))
                == [.alreadyPublished])
            #expect(try await store.claimEvents([], now: Fixtures.time(4)).isEmpty)

            let far = Fixtures.time(-1_000_000)
            let cutoffs = RetentionCutoffs(
                traceBefore: far, activitiesBefore: far, pushToStartTokensBefore: far, deadLettersBefore: far, followsBefore: far,
                eventClaimsBefore: Fixtures.time(1))
            // e-1 and e-2 were first claimed at 0; e-3 at 2.
            #expect(try await store.prune(cutoffs, limit: 10).eventClaims == 2)
            #expect(try await store.claimEvents([EventClaim(eventID: "e-1", producer: "rides", digest: "new")], now: Fixtures.time(5))
                == [.publish], "a pruned id is free again")
            #expect(try await store.claimEvents([EventClaim(eventID: "e-3", producer: "rides", digest: "new")], now: Fixtures.time(5))
                == [.conflict])
        }
    }

    /// Outcomes are kept once each, whatever the number of times one is reported, read back
    /// per event oldest first, and pruned with the event ids.
    @Test(arguments: StoreKind.underTest)
    func outcomesAreKeptOnceAndReadPerEvent(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            func outcome(_ id: String, _ event: String, at seconds: Double) -> RecordedOutcome {
                RecordedOutcome(outcomeID: id, eventID: event, domain: "ride", at: Fixtures.time(seconds), body: "{\"id\":\"\(id)\"}")
            }
            let first = [outcome("j-1/delivered", "e-1", at: 2), outcome("e-1/dropped", "e-1", at: 1), outcome("e-2/dropped", "e-2", at: 3)]
            #expect(try await store.recordOutcomes(first) == ["j-1/delivered", "e-1/dropped", "e-2/dropped"])
            // At least once: the same outcome again is not kept twice, and is not new.
            #expect(try await store.recordOutcomes([outcome("j-1/delivered", "e-1", at: 4), outcome("j-2/delivered", "e-1", at: 5)])
                == ["j-2/delivered"])
            #expect(try await store.recordOutcomes([]).isEmpty)
            let kept = try await store.outcomes(eventID: "e-1", limit: 10)
            #expect(kept.map(\.outcomeID) == ["e-1/dropped", "j-1/delivered", "j-2/delivered"])
            #expect(kept[1] == outcome("j-1/delivered", "e-1", at: 2), "the first report is the one kept")
            #expect(try await store.outcomes(eventID: "e-1", limit: 1).count == 1)
            #expect(try await store.outcomes(eventID: "e-9", limit: 10).isEmpty)

            let far = Fixtures.time(-1_000_000)
            let cutoffs = RetentionCutoffs(
                traceBefore: far, activitiesBefore: far, pushToStartTokensBefore: far, deadLettersBefore: far, followsBefore: far,
                eventClaimsBefore: Fixtures.time(2.5))
            #expect(try await store.prune(cutoffs, limit: 10).eventOutcomes == 2)
            #expect(try await store.outcomes(eventID: "e-1", limit: 10).map(\.outcomeID) == ["j-2/delivered"])
        }
    }
}
