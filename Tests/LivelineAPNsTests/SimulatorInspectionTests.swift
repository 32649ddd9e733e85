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

            let response = try await get("/_sim/devices/\(token)", from: simulator)
            #expect(response.status == 200)
            let body = try #require(response.body)
            let decoded = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [[String: Any]]
            #expect(decoded?.count == 1)
            #expect(decoded?.first?["priority"] as? Int == 10)
            #expect(decoded?.first?["payload"] as? String == String(decoding: payload, as: UTF8.self))
        }
    }

    @Test("GET /_sim/receipts follows every device push in arrival order, from a cursor")
    func receiptsRoute() async throws {
        try await withSimulatorAndClient { simulator, client in
            let first = randomDeviceToken(), second = randomDeviceToken()
            var ids: [String] = []
            for token in [first, second, first] {
                let push = APNsLiveActivityPush(deviceToken: token, payload: liveActivityPayload(), priority: .high)
                _ = try await client.send(push)
                ids.append(push.apnsID.uuidString)
            }
            let sent = Date().timeIntervalSince1970

            let all = try await get("/_sim/receipts", from: simulator)
            #expect(all.status == 200)
            let lines = String(buffer: try #require(all.body)).split(separator: "\n").map { $0.split(separator: " ") }
            #expect(lines.map { String($0[0]) } == [first, second, first])
            #expect(lines.map { String($0[1]).uppercased() } == ids.map { $0.uppercased() })
            for line in lines {
                let seconds = try #require(Double(line[2])) / 1e6
                #expect(seconds <= sent && seconds > sent - 60)
            }

            let rest = try await get("/_sim/receipts?from=2", from: simulator)
            #expect(String(buffer: try #require(rest.body)).split(separator: "\n").map { String($0.split(separator: " ")[0]) } == [first])
            let past = try await get("/_sim/receipts?from=3", from: simulator)
            #expect(past.status == 200 && (past.body?.readableBytes ?? 0) == 0)
            #expect(try await get("/_sim/receipts?from=-1", from: simulator).status == 400)
            #expect(try await get("/_sim/receipts?since=0", from: simulator).status == 400)
        }
    }

    /// A plain GET over the client's own transport.
    private func get(_ path: String, from simulator: APNsSimulator) async throws -> HTTP2Response {
        let pool = try HTTP2ConnectionPool(
            endpoint: APNsEndpoint(host: "127.0.0.1", port: simulator.port, trust: .pem(simulator.certificatePEM)),
            group: MultiThreadedEventLoopGroup.singleton,
            configuration: .init(maximumConnections: 1),
            logger: Logger(label: "test")
        )
        var headers = HPACKHeaders()
        headers.add(name: ":method", value: "GET")
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":path", value: path)
        headers.add(name: ":authority", value: "127.0.0.1")
        let connection = try await pool.lease()
        let response = try await connection.execute(HTTP2Request(headers: headers, body: nil))
        pool.release(connection)
        await pool.shutdown()
        return response
    }
}
