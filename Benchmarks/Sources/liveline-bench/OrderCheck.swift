import APNsSimulator
import Foundation

// Tests: scripts/faults, scripts/scale-demo

/// Order at the devices: each device must first receive an activity's updates in the
/// order they were published, with timestamps that rise with them. One lane's jobs are in
/// one send shard, which one sender holds at a time, so a late arrival is a defect.
///
/// Only each update's first arrival counts. A duplicate (the same push again, after a
/// worker died holding it unacked) is bounded by the loss ledger instead: it carries its
/// original timestamp, and ActivityKit keeps the newest content-state by that timestamp,
/// so the device does not step back.
struct OrderCheck: Codable, Sendable {
    /// First arrivals whose `aps.timestamp` does not rise above the one before.
    var outOfOrder = 0
    /// First arrivals that reached APNs after the first arrival of a newer update of their lane.
    var lateArrivals = 0
    /// Pushes matching no update, or without a readable `aps.timestamp`.
    var unreadable = 0
    /// The first few late arrivals (`step s after step n on device <prefix>`) and stamps out of
    /// order, to look up in the workers' logs and `liveline trace`.
    var examples: [String] = []

    var passed: Bool { outOfOrder == 0 && lateArrivals == 0 && unreadable == 0 }

    var text: String {
        "order: \(lateArrivals) late arrival(s) (a push reaching APNs after a newer one of its lane), "
            + "\(outOfOrder) with timestamps out of event order, \(unreadable) unreadable"
            + (examples.isEmpty ? "" : " (" + examples.joined(separator: "; ") + ")")
    }

    init() {}

    /// The steady load's lanes: one device per activity, its step `index / activities`.
    init(of load: Load, at simulator: APNsSimulator, apnsIDs: [String: Int]) {
        for activity in 0..<load.activities {
            add(simulator.deliveries(toDevice: load.events.token(activity)), device: load.events.token(activity)) {
                apnsIDs[$0].map { $0 / load.activities }
            }
        }
    }

    /// One device's pushes in the order APNs received them; `step` gives an apns-id's place
    /// in the lane, nil for a push of no known update.
    mutating func add(_ deliveries: [APNsSimulatorDelivery], device: String, step: (String) -> Int?) {
        var seen = Set<Int>()
        var newest = -1
        var lastTimestamp = Int.min
        for delivery in deliveries {
            guard let step = step(delivery.apnsID.lowercased()), let timestamp = Self.timestamp(delivery.payload) else {
                unreadable += 1
                continue
            }
            guard seen.insert(step).inserted else { continue }
            if step < newest {
                lateArrivals += 1
                if examples.count < 3 { examples.append("step \(step) after step \(newest) on device \(device.prefix(8))") }
            }
            if timestamp <= lastTimestamp, step > newest {
                outOfOrder += 1
                if examples.count < 3 {
                    examples.append("step \(step) stamped \(timestamp), not after \(lastTimestamp), on device \(device.prefix(8))")
                }
            }
            newest = max(newest, step)
            lastTimestamp = max(lastTimestamp, timestamp)
        }
    }

    static func timestamp(_ payload: [UInt8]) -> Int? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any],
            let aps = object["aps"] as? [String: Any]
        else { return nil }
        return aps["timestamp"] as? Int
    }

    static func + (left: OrderCheck, right: OrderCheck) -> OrderCheck {
        var sum = left
        sum.outOfOrder += right.outOfOrder
        sum.lateArrivals += right.lateArrivals
        sum.unreadable += right.unreadable
        sum.examples = Array((sum.examples + right.examples).prefix(3))
        return sum
    }
}
