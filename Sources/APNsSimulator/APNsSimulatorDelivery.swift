import Foundation

// Tests: none needed (declarations only)

/// One push the simulator accepted, as a device or channel would have received it.
public struct APNsSimulatorDelivery: Sendable, Hashable {
    /// The device token or channel id it was addressed to.
    public internal(set) var recipient: String
    /// The payload bytes exactly as received.
    public let payload: [UInt8]
    /// Every non-pseudo header except `authorization`, lowercased names.
    public let headers: [String: String]
    /// `apns-priority` (10 when absent, as APNs defaults).
    public let priority: Int
    /// `apns-push-type`.
    public let pushType: String?
    /// `apns-topic` (device pushes) or the path's bundle id (broadcasts).
    public let topic: String?
    /// The `apns-id`/`apns-request-id` the simulator answered with.
    public let apnsID: String
    /// When it arrived.
    public let receivedAt: Date

    /// The payload as UTF-8 text.
    public var payloadString: String { String(decoding: payload, as: UTF8.self) }
}

/// Counters for benchmarks and tests.
public struct APNsSimulatorStatistics: Sendable, Hashable {
    /// Requests answered (or dropped by a fault).
    public var requests: Int = 0
    /// Answers per HTTP status.
    public var responsesByStatus: [Int: Int] = [:]
    /// Connections accepted.
    public var connectionsAccepted: Int = 0
    /// GOAWAY frames sent by the fault.
    public var goAwaysSent: Int = 0
    /// Connections closed by the reset fault.
    public var connectionsReset: Int = 0
    /// The most streams ever open at once on one connection.
    public var maximumObservedConcurrentStreams: Int = 0
}
