import Foundation

// Tests: Tests/LivelineAPNsTests/DevicePushTests.swift, Tests/LivelineAPNsTests/SimulatorInspectionTests.swift

/// Everything the simulator remembers, kept in one struct behind one lock.
///
/// The hot path takes the lock once per request (fault lookup, counters and the delivery record
/// together), and never suspends: no actor hop per request.
struct SimulatorState: Sendable {
    struct DeviceFault: Sendable {
        var fault: APNsSimulatorFault
        /// `nil`: every request; otherwise how many more requests it applies to.
        var remaining: Int?
    }

    struct Channel: Sendable {
        var bundleID: String
        var storagePolicy: Int
        var createdAt: Date
    }

    var deviceDeliveries: [String: [APNsSimulatorDelivery]] = [:]
    /// Every device push in arrival order, for `GET /_sim/receipts`: a benchmark in another
    /// process follows it with a cursor instead of asking for each device in turn.
    var deviceArrivals: [APNsSimulatorDelivery] = []
    var channelDeliveries: [String: [APNsSimulatorDelivery]] = [:]
    /// Channel id → channel. Deleted channels are removed.
    var channels: [String: Channel] = [:]
    /// Channel ids in creation order, for stable listing.
    var channelOrder: [String] = []
    /// Device token → the channels its activities were started on (`input-push-channel`),
    /// each from the broadcast count at the start: a device shows every broadcast from there
    /// to the channel's end. Kept as positions, so a broadcast to 100,000 listeners costs
    /// nothing more than one to none.
    var listening: [String: [(channel: String, from: Int)]] = [:]
    /// Channel id → the position of its broadcast that ended the activities.
    var channelEnds: [String: Int] = [:]

    /// What a device shows: its own pushes and the broadcasts of the channels it listens to,
    /// under its token, in arrival order.
    func deliveries(toDevice token: String) -> [APNsSimulatorDelivery] {
        var shown = deviceDeliveries[token] ?? []
        for (channel, from) in listening[token] ?? [] {
            let broadcasts = channelDeliveries[channel] ?? []
            let end = min(channelEnds[channel].map { $0 + 1 } ?? broadcasts.count, broadcasts.count)
            guard from < end else { continue }
            shown += broadcasts[from..<end].map { broadcast in
                var copy = broadcast
                copy.recipient = token
                return copy
            }
        }
        return shown.enumerated().sorted { ($0.element.receivedAt, $0.offset) < ($1.element.receivedAt, $1.offset) }.map(\.element)
    }
    var deviceFaults: [String: DeviceFault] = [:]
    var randomFaults: [(fault: APNsSimulatorFault, probability: Double)] = []
    var statistics = APNsSimulatorStatistics()
    var tokenVerdicts: [String: ProviderTokenVerifier.Verdict] = [:]
    /// The last `authorization` value seen and its verdict: the common case, checked first.
    var lastToken: (authorization: String, verdict: ProviderTokenVerifier.Verdict)?
    var goAwayConnectionsUsed = 0

    /// The fault that applies to this request, consuming one use of a counted device fault.
    mutating func takeFault(forDevice token: String?) -> APNsSimulatorFault? {
        if let token, var entry = deviceFaults[token] {
            if let remaining = entry.remaining {
                if remaining <= 1 {
                    deviceFaults[token] = nil
                } else {
                    entry.remaining = remaining - 1
                    deviceFaults[token] = entry
                }
            }
            return entry.fault
        }
        if !randomFaults.isEmpty {
            var roll = Double.random(in: 0..<1)
            for candidate in randomFaults {
                if roll < candidate.probability { return candidate.fault }
                roll -= candidate.probability
            }
        }
        return nil
    }

    mutating func count(status: Int) {
        statistics.requests += 1
        statistics.responsesByStatus[status, default: 0] += 1
    }
}
