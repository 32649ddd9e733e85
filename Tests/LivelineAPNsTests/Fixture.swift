import APNsSimulator
import Crypto
import Foundation
import LivelineAPNs

/// A signing key as Apple hands it out (.p8 = PKCS#8 PEM), with the ids that go with it.
struct TestKey {
    let teamID: String
    let keyID: String
    let privateKey = P256.Signing.PrivateKey()

    var privateKeyPEM: String { privateKey.pemRepresentation }
    var trusted: APNsSimulatorConfiguration.TrustedKey {
        .init(keyID: keyID, teamID: teamID, publicKeyPEM: privateKey.publicKey.pemRepresentation)
    }
}

/// A device token as iOS hands it out: 32 random bytes as hex.
func randomDeviceToken() -> String {
    (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
}

/// A realistic ~300-byte liveactivity update payload.
func liveActivityPayload(eta: Int = 300) -> [UInt8] {
    let json = #"{"aps":{"timestamp":\#(Int(Date().timeIntervalSince1970)),"event":"update","content-state":{"driverName":"Ana","driverPhoto":"ana.jpg","vehicleDescription":"Blue Civic · KX-42","etaStartSeconds":\#(eta),"etaEndSeconds":\#(eta + 120),"status":"enRoute","distanceRemaining":1840},"stale-date":\#(Int(Date().timeIntervalSince1970) + 900),"relevance-score":50}}"#
    return Array(json.utf8)
}

/// Starts a simulator on 127.0.0.1:0 and a client trusting its certificate; tears both down.
func withSimulatorAndClient<T>(
    simulator simulatorConfiguration: APNsSimulatorConfiguration = .init(),
    key: TestKey = TestKey(teamID: "TEAM123456", keyID: "KEY1234567"),
    trustKey: Bool = true,
    bundleID: String = "com.example.rides",
    pool: APNsConnectionPoolConfiguration = .init(),
    clock: any WallClock = SystemWallClock(),
    _ body: (APNsSimulator, APNsClient) async throws -> T
) async throws -> T {
    var simulatorConfiguration = simulatorConfiguration
    if trustKey { simulatorConfiguration.trustedKeys.append(key.trusted) }
    let simulator = try APNsSimulator(configuration: simulatorConfiguration)
    let port = try await simulator.start()
    let trust: APNsEndpoint.Trust = simulatorConfiguration.useTLS ? .pem(simulator.certificatePEM) : .plaintext
    let endpoint = APNsEndpoint(host: "127.0.0.1", port: port, trust: trust)
    let client = try APNsClient(
        configuration: APNsClientConfiguration(
            bundleID: bundleID,
            teamID: key.teamID,
            keyID: key.keyID,
            privateKeyPEM: key.privateKeyPEM,
            endpoint: endpoint,
            channelManagementEndpoint: endpoint,
            pool: pool
        ),
        clock: clock
    )
    do {
        let result = try await body(simulator, client)
        await client.shutdown()
        try await simulator.stop()
        return result
    } catch {
        await client.shutdown()
        try? await simulator.stop()
        throw error
    }
}

/// Sends and returns the outcome, never throwing.
func outcome(of push: APNsLiveActivityPush, via client: APNsClient) async -> Result<APNsResponse, APNsError> {
    do {
        return .success(try await client.send(push))
    } catch {
        return .failure(error)
    }
}
