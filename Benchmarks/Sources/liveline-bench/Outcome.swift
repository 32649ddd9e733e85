import Foundation
import LivelineBenchSupport
import LivelineStore

// Tests: scripts/bench-smoke, scripts/faults

/// What became of a load's events: the ledger, and each delivered event's latency from
/// its publish to the simulator's receipt.
struct Outcome: Sendable {
    var ledger: LossLedger
    /// Milliseconds, one per delivered event (its first push), sorted.
    var latencies: [Double]
    /// Each event's latency in milliseconds, by its index in the load; nil where none of its
    /// pushes arrived.
    var latencyByEvent: [Double?]
    /// When the last push arrived (seconds since 1970), 0 when none did.
    var lastReceipt: Double
    var pushes: Int

    static func collect(
        pipeline: Pipeline, load: Load, publishedAt: [Double], apnsIDs: [String: Int], duplicateBound: Int
    ) async throws -> Outcome {
        var ledger = LossLedger(events: load.ledgerEvents, duplicateBound: duplicateBound)
        var firstReceipt = [Double](repeating: 0, count: load.total)
        var lastReceipt = 0.0
        var pushes = 0
        for receipts in try await pipeline.receiver.receipts(toDevices: (0..<load.activities).map(load.events.token)) {
            for delivery in receipts {
                pushes += 1
                let at = delivery.receivedAt
                lastReceipt = max(lastReceipt, at)
                guard let index = apnsIDs[delivery.apnsID.lowercased()] else {
                    ledger.unexpectedDeliveries += 1
                    continue
                }
                ledger.deliveries[load.events.eventId(index), default: 0] += 1
                if firstReceipt[index] == 0 || at < firstReceipt[index] { firstReceipt[index] = at }
            }
        }

        // Only the activities with an undelivered event need their trace and dead letters.
        let undelivered = Set((0..<load.total).filter { firstReceipt[$0] == 0 }.map { load.events.activityId($0 % load.activities) })
        if !undelivered.isEmpty {
            try await pipeline.withStore { store in
                for activity in undelivered {
                    for letter in try await store.deadLetters(matching: DeadLetterFilter(activityID: activity), limit: 10_000) {
                        if let event = letter.eventID { ledger.deadLetters[event] = letter.reason }
                    }
                    for entry in try await store.trace(activityID: activity, limit: 10_000) {
                        if entry.kind == .dropped, let drop = LossLedger.drop(fromTrace: entry.detail) {
                            ledger.drops[drop.eventID] = drop.reason
                        } else if entry.kind == .apnsOutcome, let event = LossLedger.unregistered(fromTrace: entry.detail) {
                            ledger.rejections[event] = "Unregistered"
                        }
                    }
                }
            }
        }
        let latencyByEvent = zip(firstReceipt, publishedAt).map { received, published in
            received > 0 ? (received - published) * 1000 : nil
        }
        return Outcome(
            ledger: ledger, latencies: latencyByEvent.compactMap { $0 }.sorted(), latencyByEvent: latencyByEvent,
            lastReceipt: lastReceipt, pushes: pushes)
    }

    /// The latency at quantile `q` (0...1), nearest rank.
    func latency(_ q: Double) -> Double { Self.quantile(q, ofSorted: latencies) }

    /// Nearest rank; 0 for no values.
    static func quantile(_ q: Double, ofSorted values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        let rank = Int((q * Double(values.count)).rounded(.up))
        return values[min(max(rank, 1), values.count) - 1]
    }
}
