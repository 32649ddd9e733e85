import APNsSimulator
import Foundation
import InMemoryLogging
import LivelineAPNs
import Logging
import Testing

/// A sender pointed at an endpoint it cannot trust must say so at the default log level:
/// every push would otherwise wait and retry with nothing in the log.
@Suite struct ConnectionFailureLogTests {
    @Test func aFailedTLSHandshakeIsAnErrorWithItsCause() async throws {
        let key = TestKey(teamID: "TEAM123456", keyID: "KEY1234567")
        let simulator = try APNsSimulator(configuration: .init(trustedKeys: [key.trusted]))
        let other = try APNsSimulator(configuration: .init())
        let port = try await simulator.start()
        // Trusts another simulator's certificate: the handshake with this one must fail.
        let endpoint = APNsEndpoint(host: "127.0.0.1", port: port, trust: .pem(other.certificatePEM))
        var handler = InMemoryLogHandler()
        handler.logLevel = .info
        let logs = handler
        let client = try APNsClient(
            configuration: APNsClientConfiguration(
                bundleID: "com.example.rides", teamID: key.teamID, keyID: key.keyID, privateKeyPEM: key.privateKeyPEM,
                endpoint: endpoint, pool: .init(requestTimeout: .seconds(3))),
            logger: Logger(label: "test.apns") { _ in logs })
        await #expect(throws: APNsError.self) {
            _ = try await client.send(
                APNsLiveActivityPush(deviceToken: randomDeviceToken(), payload: liveActivityPayload(), priority: .low))
        }
        let status = client.connectionStatus
        #expect(status.openConnections == 0 && status.consecutiveFailures >= 1 && status.lastFailure != nil)
        await client.shutdown()
        try await simulator.stop()
        let errors = handler.entries.filter { $0.level == .error }
        #expect(errors.count >= 1, "\(handler.entries.map(\.message))")
        let entry = try #require(errors.first)
        #expect(entry.message.description.contains("apns connection failed before it was ready"))
        #expect(entry.metadata["apns.host"]?.description == "127.0.0.1:\(port)")
        #expect(entry.metadata["apns.error"]?.description.isEmpty == false)
        #expect(errors.count <= 2, "repeats are summed, not logged one by one")
    }
}
