import APNsSimulator
import Foundation
import Logging
import NIOCore
import NIOHPACK
import NIOPosix
import Testing

@testable import LivelineAPNs

@Suite("Simulator inspection routes")
struct SimulatorInspectionTests {
    @Test("GET /_sim/devices/<token> returns what the device received, as JSON")
    func devicesRoute() async throws {
        try await withSimulatorAndClient { simulator, client in
            let token = randomDeviceToken()
            let payload = liveActivityPayload()
            _ = try await client.send(APNsLiveActivityPush(deviceToken: token, payload: payload, priority: .high))

            // Reuse the client's own transport for a plain GET.
            let pool = try HTTP2ConnectionPool(
                endpoint: APNsEndpoint(host: "127.0.0.1", port: simulator.port, trust: .pem(simulator.certificatePEM)),
                group: MultiThreadedEventLoopGroup.singleton,
                configuration: .init(maximumConnections: 1),
                logger: Logger(label: "test")
            )
            var headers = HPACKHeaders()
            headers.add(name: ":method", value: "GET")
            headers.add(name: ":scheme", value: "https")
            headers.add(name: ":path", value: "/_sim/devices/\(token)")
            headers.add(name: ":authority", value: "127.0.0.1")
            let connection = try await pool.lease()
            let response = try await connection.execute(HTTP2Request(headers: headers, body: nil))
            pool.release(connection)
            await pool.shutdown()

            #expect(response.status == 200)
            let body = try #require(response.body)
            let decoded = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [[String: Any]]
            #expect(decoded?.count == 1)
            #expect(decoded?.first?["priority"] as? Int == 10)
            #expect(decoded?.first?["payload"] as? String == String(decoding: payload, as: UTF8.self))
        }
    }
}
