import Foundation

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
    var channelDeliveries: [String: [APNsSimulatorDelivery]] = [:]
    /// Channel id → channel. Deleted channels are removed.
    var channels: [String: Channel] = [:]
    /// Channel ids in creation order, for stable listing.
    var channelOrder: [String] = []
    /// Channel id → the device tokens whose activity was started with it as
    /// `input-push-channel` and has not ended: each broadcast reaches them too.
    var listeners: [String: Set<String>] = [:]
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
