import Foundation
import NIOCore

// Tests: Tests/LivelineAPNsTests/DevicePushTests.swift, Tests/LivelineAPNsTests/ReferenceServerTests.swift

/// The JSON body of an APNs error: `{"reason":"Unregistered","timestamp":1700000000000}`.
struct APNsErrorBody: Sendable {
    var reason: APNsReason?
    /// From the millisecond UNIX `timestamp` of a 410.
    var timestamp: Date?

    private struct Wire: Decodable {
        var reason: String?
        var timestamp: Int64?
    }

    static func decode(_ body: ByteBuffer?) -> APNsErrorBody {
        guard let body, body.readableBytes > 0,
            let wire = try? JSONDecoder().decode(Wire.self, from: Data(body.readableBytesView))
        else { return APNsErrorBody() }
        return APNsErrorBody(
            reason: wire.reason.map(APNsReason.init(rawValue:)),
            timestamp: wire.timestamp.map { Date(timeIntervalSince1970: TimeInterval($0) / 1000) }
        )
    }
}
