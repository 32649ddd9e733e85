import Foundation
import LivelineCore
import Testing

/// Batches keep the newest plain update per activity; ends and starts always stay.
@Suite("Coalescing")
struct CoalescingTests {
    let translator = Fixtures.translator

    @Test func olderUpdatesOfTheSameActivityAreDropped() throws {
        let tick = try Fixtures.event("ride-eta-tick")
        let arrived = try Fixtures.event("ride-arrived")
        let score = try Fixtures.event("score-clock")
        let batch = translator.coalesce([tick, score, arrived])
        #expect(batch.kept.map(\.id) == [score.id, arrived.id])
        #expect(batch.superseded.map(\.event.id) == [tick.id])
        #expect(batch.superseded.first?.supersededBy == arrived.id)
    }

    @Test func outOfOrderBatchKeepsTheNewest() throws {
        let tick = try Fixtures.event("ride-eta-tick")
        let arrived = try Fixtures.event("ride-arrived")
        let batch = translator.coalesce([arrived, tick])
        #expect(batch.kept.map(\.id) == [arrived.id])
    }

    @Test func endsAndStartsAreNeverCoalescedAway() throws {
        let start = try Fixtures.event("ride-assigned")  // carries attributes
        let cancelled = try Fixtures.event("ride-cancelled")
        let arrived = try Fixtures.event("ride-arrived")
        let batch = translator.coalesce([start, cancelled, arrived])
        #expect(batch.kept.map(\.id) == [start.id, cancelled.id, arrived.id])
        #expect(batch.superseded.isEmpty)
    }

    @Test func duplicatesInABatchAreKeptForTheGuardToDrop() throws {
        let tick = try Fixtures.event("ride-eta-tick")
        let batch = translator.coalesce([tick, tick])
        #expect(batch.kept.count == 2)
    }

    /// Across batches: only the current batch's plain updates with a newer event for the
    /// same activity in the next batch; never an end, a start, or another activity's event.
    @Test func aNewerEventInTheNextBatchSupersedesOnlyPlainUpdates() throws {
        let tick = try Fixtures.event("ride-eta-tick")
        let start = try Fixtures.event("ride-assigned")
        let cancelled = try Fixtures.event("ride-cancelled")
        let arrived = try Fixtures.event("ride-arrived")
        let score = try Fixtures.event("score-clock")
        #expect(translator.supersededAhead([tick, start, score], by: [arrived]) == [tick.id: arrived.id])
        #expect(translator.supersededAhead([cancelled], by: [arrived]).isEmpty)
        #expect(translator.supersededAhead([arrived], by: [tick]).isEmpty, "the next batch's event is older")
        #expect(translator.supersededAhead([tick], by: []).isEmpty)
    }
}
