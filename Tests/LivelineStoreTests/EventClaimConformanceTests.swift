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
}
