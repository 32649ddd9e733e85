import APNsSimulator
import Crypto
import Foundation
import LivelineAPNs
import LivelineCore
import LivelineRuntime
import LivelineServices
import LivelineTestSupport
import Testing

/// `liveline push` against the APNs simulator, configured as an operator configures the
/// sender (`liveline.apps`): the push the simulator receives, APNs' refusal shown as it
/// came, and each mistake named before anything is sent.
@Suite(.timeLimit(.minutes(1)))
struct TestPushSenderTests {
    static let rideState = Data("""
        {"driverName":"Maria","driverPhoto":"car.fill","vehicleDescription":"White Toyota Camry",
         "etaStartSeconds":1790000000,"etaEndSeconds":1790000300,"status":"driverArrived","distanceRemaining":0.2}
        """.utf8)

    static func token() -> String { (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() }

    /// The rides app signing with key A, and a simulator that trusts it playing both environments.
    static func withSender(_ body: (TestPushSender, APNsSimulator) async throws -> Void) async throws {
        let keys = try APNsSettingsTests.Keys()
        let key = try P256.Signing.PrivateKey(pemRepresentation: keys.pemA)
        let simulator = try APNsSimulator(configuration: .init(trustedKeys: [
            .init(keyID: "KEYAAAAAAA", teamID: "TEAM000001", publicKeyPEM: key.publicKey.pemRepresentation),
        ]))
        let port = try await simulator.start()
        let caFile = keys.directory.appendingPathComponent("ca.pem")
        try simulator.certificatePEM.write(to: caFile, atomically: true, encoding: .utf8)
        let clients = try APNsSettings(config: try await LivelineSettings.reader(file: nil, environment: [
            "LIVELINE_APPS": "rides",
            "LIVELINE_APP_RIDES_BUNDLE_ID": "com.example.rides",
            "LIVELINE_APP_RIDES_TEAM_ID": "TEAM000001",
            "LIVELINE_APP_RIDES_KEY_ID": "KEYAAAAAAA",
            "LIVELINE_APP_RIDES_KEY_FILE": keys.path("A.p8"),
            "LIVELINE_APNS_ENDPOINT": "127.0.0.1:\(port)",
            "LIVELINE_APNS_CA_FILE": caFile.path,
        ])).clients(logger: Broker.logger)
        let sender = TestPushSender(translator: Translator(configuration: .standard(bundleId: "com.example.rides")), clients: clients)
        do {
            try await body(sender, simulator)
        } catch {
            await clients.shutdown()
            try await simulator.stop()
            throw error
        }
        await clients.shutdown()
        try await simulator.stop()
    }

    @Test func anUpdateWithAnAlertReachesTheDevice() async throws {
        try await Self.withSender { sender, simulator in
            let token = Self.token()
            var request = TestPushSender.Request(
                token: token.uppercased(), bundleID: nil, attributesType: "RideAttributes", contentState: Self.rideState)
            request.alert = ("Maria is here", "White Toyota Camry")
            let answer = try await sender.send(request)
            #expect(answer.delivered, "\(answer.text)")
            #expect(answer.bundleID == "com.example.rides" && answer.domain == "ride" && answer.environment == "production")
            let delivery = try #require(simulator.deliveries(toDevice: token).first)
            #expect(delivery.apnsID.lowercased() == answer.apnsID?.lowercased())
            #expect(delivery.topic == "com.example.rides.push-type.liveactivity")
            #expect(delivery.priority == 10)
            let aps = try #require((try JSONSerialization.jsonObject(with: Data(delivery.payload)) as? [String: Any])?["aps"] as? [String: Any])
            #expect(aps["event"] as? String == "update")
            #expect((aps["alert"] as? [String: Any])?["title"] as? String == "Maria is here")
            #expect((aps["content-state"] as? [String: Any])?["status"] as? String == "driverArrived")
            #expect(answer.payload == delivery.payloadString)
        }
    }

    @Test func anEndIsDismissedAtOnce() async throws {
        try await Self.withSender { sender, simulator in
            let token = Self.token()
            var request = TestPushSender.Request(
                token: token, bundleID: "com.example.rides", attributesType: "RideAttributes", contentState: Self.rideState)
            request.end = true
            let now = Date()
            let answer = try await sender.send(request, now: now)
            #expect(answer.delivered)
            let delivery = try #require(simulator.deliveries(toDevice: token).first)
            let aps = try #require((try JSONSerialization.jsonObject(with: Data(delivery.payload)) as? [String: Any])?["aps"] as? [String: Any])
            #expect(aps["event"] as? String == "end")
            #expect(aps["dismissal-date"] as? Int == Int(now.timeIntervalSince1970))
        }
    }

    @Test func apnsRefusalIsShownAsItCame() async throws {
        try await Self.withSender { sender, simulator in
            let token = Self.token()
            simulator.injectFault(.status(400, reason: "BadDeviceToken"), forDevice: token)
            let answer = try await sender.send(TestPushSender.Request(
                token: token, bundleID: nil, attributesType: "RideAttributes", contentState: Self.rideState))
            #expect(!answer.delivered)
            #expect(answer.status == 400 && answer.reason == "BadDeviceToken")
            #expect(answer.text.hasPrefix("APNs refused the push: 400 BadDeviceToken"), "\(answer.text)")
        }
    }

    @Test func mistakesAreNamedBeforeAnythingIsSent() async throws {
        try await Self.withSender { sender, simulator in
            func refusal(_ request: TestPushSender.Request) async -> String {
                do {
                    _ = try await sender.send(request)
                    return "sent"
                } catch {
                    return "\(error)"
                }
            }
            let token = Self.token()
            let missing = Data(#"{"driverName":"Maria","status":"driverArrived"}"#.utf8)
            #expect(await refusal(.init(token: token, bundleID: nil, attributesType: "RideAttributes", contentState: missing))
                .hasPrefix("--state does not match RideAttributes.ContentState"))
            #expect(await refusal(.init(token: token, bundleID: nil, attributesType: "RideAttributes", contentState: Data("{".utf8)))
                .hasPrefix("--state is not JSON"))
            #expect(await refusal(.init(token: token, bundleID: nil, attributesType: "PizzaAttributes", contentState: Self.rideState))
                .contains("RideAttributes"), "the error lists the attributes types there are")
            #expect(await refusal(.init(token: "xyz", bundleID: nil, attributesType: "RideAttributes", contentState: Self.rideState))
                .hasPrefix("--token must be"))
            #expect(await refusal(.init(token: token, bundleID: "com.example.other", attributesType: "RideAttributes", contentState: Self.rideState))
                .contains("no APNs credentials for com.example.other"))
            #expect(simulator.statistics.requests == 0, "nothing reached APNs")
        }
    }
}
