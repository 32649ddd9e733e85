import LivelineBenchSupport
import Testing

/// The ledger must catch what a broken pipeline would do: lose an event, drop one without
/// its rule, or send more duplicates than the windows allow.
@Suite struct LossLedgerTests {
    /// Three activities of four events; the third ends at its third event.
    static let events: [LossLedger.Event] = (0..<3).flatMap { activity in
        (0..<4).map { step in
            LossLedger.Event(id: "a\(activity)-\(step)", activity: "a\(activity)", sequence: step, isEnd: activity == 2 && step == 2)
        }
    }

    /// Every event delivered, except the third activity's last, dropped after its end.
    static func healthy() -> LossLedger {
        var ledger = LossLedger(events: events, duplicateBound: 0)
        for event in events where event.id != "a2-3" { ledger.deliveries[event.id] = 1 }
        ledger.drops["a2-3"] = "afterEnd"
        return ledger
    }

    @Test func aHealthyRunPasses() {
        let verdict = Self.healthy().verdict()
        #expect(verdict.passed, "\(verdict.text)")
        #expect(verdict.delivered == 11)
        #expect(verdict.dropped == ["afterEnd": 1])
        #expect(verdict.lost.isEmpty)
    }

    @Test func aDeliberatelyLostMessageIsCaught() {
        var ledger = Self.healthy()
        ledger.deliveries["a1-2"] = nil
        let verdict = ledger.verdict()
        #expect(!verdict.passed)
        #expect(verdict.lost == ["a1-2"])
        #expect(verdict.text.contains("lost           1 (a1-2)"))
        #expect(verdict.text.hasSuffix("ledger: FAIL"))
    }

    @Test func aDeadLetterWithItsReasonIsNotALoss() {
        var ledger = Self.healthy()
        ledger.deliveries["a0-1"] = nil
        ledger.deadLetters["a0-1"] = "invalidEvent"
        let verdict = ledger.verdict()
        #expect(verdict.passed, "\(verdict.text)")
        #expect(verdict.deadLettered == ["invalidEvent": 1])
    }

    @Test func aSupersededEventNeedsANewerOneDelivered() {
        var ledger = Self.healthy()
        ledger.deliveries["a0-1"] = nil
        ledger.drops["a0-1"] = "superseded"
        #expect(ledger.verdict().passed)

        // The newest event of an activity cannot have been superseded.
        ledger.deliveries["a0-3"] = nil
        ledger.drops["a0-3"] = "superseded"
        let verdict = ledger.verdict()
        #expect(!verdict.passed)
        #expect(verdict.unjustifiedDrops == ["a0-3 (superseded)"])
    }

    @Test func aDropAfterTheEndNeedsTheEndDelivered() {
        var ledger = Self.healthy()
        ledger.deliveries["a2-2"] = nil
        ledger.drops["a2-2"] = "stale"
        // The end dropped as stale with no later event delivered is unjustified, and the
        // drop after it then has no delivered end to rest on.
        let verdict = ledger.verdict()
        #expect(verdict.unjustifiedDrops == ["a2-2 (stale)", "a2-3 (afterEnd)"])
    }

    @Test func anUnknownDropReasonIsNeverJustified() {
        var ledger = Self.healthy()
        ledger.deliveries["a1-0"] = nil
        ledger.drops["a1-0"] = "noTarget"
        #expect(ledger.verdict().unjustifiedDrops == ["a1-0 (noTarget)"])
    }

    @Test func duplicatesAreCountedAndHeldToTheirBound() {
        var ledger = Self.healthy()
        ledger.deliveries["a0-0"] = 3
        ledger.duplicateBound = 2
        #expect(ledger.verdict().duplicates == 2)
        #expect(ledger.verdict().passed)
        ledger.duplicateBound = 1
        #expect(!ledger.verdict().passed)
    }

    @Test func aPushMatchingNoEventFails() {
        var ledger = Self.healthy()
        ledger.unexpectedDeliveries = 1
        #expect(!ledger.verdict().passed)
    }
}

/// The drops come from the trace lines `liveline why` shows, in the translator's words.
@Suite struct TraceDropTests {
    @Test func readsACoalescedEvent() {
        let drop = LossLedger.drop(fromTrace: "event r1-bench-7: superseded by r1-bench-107 in the same batch")
        #expect(drop?.eventID == "r1-bench-7")
        #expect(drop?.reason == "superseded")
    }

    @Test func readsATranslatorDropWhoseTimeHasColons() {
        let detail = "event r1-bench-5 at 2026-11-24T10:00:00.000Z (driverEnRoute): stale: event time "
            + "2026-11-24T10:00:00.000Z is not newer than the last applied 2026-11-24T10:00:10.000Z"
        let drop = LossLedger.drop(fromTrace: detail)
        #expect(drop?.eventID == "r1-bench-5")
        #expect(drop?.reason == "stale")
    }

    @Test func readsADropForAStateStoredMeanwhile() {
        let detail = "event r1-bench-5 at 2026-11-24T10:00:00.000Z (driverEnRoute): stale: not sent, the store holds a newer event stored meanwhile"
        #expect(LossLedger.drop(fromTrace: detail)?.reason == "stale")
    }

    @Test func readsTheReasonAfterEarlierNotes() {
        let detail = "event e9 at 2026-11-24T10:00:00Z (completed): budget 3/10; afterEnd: the activity ended at 2026-11-24T09:00:00Z"
        #expect(LossLedger.drop(fromTrace: detail)?.reason == "afterEnd")
    }

    @Test func ignoresLinesThatAreNotDrops() {
        #expect(LossLedger.drop(fromTrace: "apns 200 for update token 0a1b2c3d…") == nil)
        #expect(LossLedger.drop(fromTrace: "event e1 at 2026-11-24T10:00:00Z (live): sent to 1 device") == nil)
    }
}

extension TraceDropTests {
    @Test func readsASendersDrop() {
        let drop = LossLedger.drop(fromTrace: "job 3f2a9c1b7d4e event r1-bench-9 update to update token 0a1b2c3d…: superseded: not sent (attempt 2)")
        #expect(drop?.eventID == "r1-bench-9")
        #expect(drop?.reason == "superseded")
    }
}

extension LossLedgerTests {
    @Test func aDeviceAPNsCalledGoneEndsItsActivitysPushes() {
        var ledger = Self.healthy()
        // APNs answered 410 for a1-1; a1-2 and a1-3 then had no target.
        for id in ["a1-1", "a1-2", "a1-3"] { ledger.deliveries[id] = nil }
        ledger.rejections["a1-1"] = "Unregistered"
        ledger.drops["a1-2"] = "noTarget"
        ledger.drops["a1-3"] = "noTarget"
        let verdict = ledger.verdict()
        #expect(verdict.passed, "\(verdict.text)")
        #expect(verdict.rejected == ["Unregistered": 1])

        // Without the 410, a missing target is unexplained.
        ledger.rejections["a1-1"] = nil
        ledger.drops["a1-1"] = "noTarget"
        #expect(ledger.verdict().unjustifiedDrops.count == 3)
    }
}

extension TraceDropTests {
    @Test func readsA410() {
        let detail = "job 3f2a9c1b7d4e event r1-bench-9 update to update token 0a1b2c3d…: 410 Unregistered; 1 registration(s) of update token 0a1b2c3d… deleted"
        #expect(LossLedger.unregistered(fromTrace: detail) == "r1-bench-9")
        #expect(LossLedger.unregistered(fromTrace: "job 3f2a event r1 update to x: delivered (200), attempt 1") == nil)
    }
}

extension LossLedgerTests {
    /// A poison device: its newest event sits in the dead-letter queue, and the older
    /// ones, superseded on their retries, rest on it.
    @Test func aSupersededEventMayRestOnANewerDeadLetter() {
        var ledger = Self.healthy()
        for id in ["a0-2", "a0-3"] { ledger.deliveries[id] = nil }
        ledger.drops["a0-2"] = "superseded"
        ledger.deadLetters["a0-3"] = "retries-exhausted"
        let verdict = ledger.verdict()
        #expect(verdict.passed, "\(verdict.text)")
        #expect(verdict.deadLettered == ["retries-exhausted": 1])
    }
}
