import APNsSimulator
import Foundation
import LivelineAPNs
import Testing

@Suite("Broadcast and channel management (iOS 18)")
struct BroadcastTests {
    @Test("channel lifecycle: create, read, list, broadcast, delete, broadcast to deleted fails")
    func channelLifecycle() async throws {
        try await withSimulatorAndClient(bundleID: "com.example.scores") { simulator, client in
            let channelID = try await client.createChannel(storagePolicy: .mostRecentMessageStored)
            #expect(!channelID.isEmpty)

            let configuration = try await client.channelConfiguration(id: channelID)
            #expect(configuration.storagePolicy == .mostRecentMessageStored)
            #expect(configuration.pushType == "LiveActivity")

            let other = try await client.createChannel()
            #expect(try await client.allChannelIDs() == [channelID, other])

            let requestID = UUID()
            let payload = liveActivityPayload()
            let response = try await client.broadcast(
                APNsBroadcastPush(channelID: channelID, payload: payload, priority: .high, expiration: .immediately, requestID: requestID)
            )
            #expect(response.apnsID == requestID.uuidString)
            let received = simulator.deliveries(toChannel: channelID)
            #expect(received.count == 1)
            #expect(received.first?.payload == payload)
            #expect(received.first?.headers["apns-channel-id"] == channelID)
            #expect(received.first?.priority == 10)

            try await client.deleteChannel(id: channelID)
            #expect(try await client.allChannelIDs() == [other])

            do {
                _ = try await client.channelConfiguration(id: channelID)
                Issue.record("reading a deleted channel must fail")
            } catch let error as APNsError {
                #expect(error.reason == .channelNotRegistered)
                #expect(error.outcome == .permanent)
            }
            do {
                _ = try await client.broadcast(APNsBroadcastPush(channelID: channelID, payload: payload, priority: .low))
                Issue.record("broadcasting to a deleted channel must fail")
            } catch let error as APNsError {
                #expect(error.status == 400)
                #expect(error.reason == .channelNotRegistered)
                #expect(error.outcome == .permanent)
            }
            #expect(simulator.deliveries(toChannel: channelID).count == 1)
        }
    }
}

@Suite("Several apps in one process")
struct MultiAppTests {
    @Test("two apps with different keys and topics share one simulator and event loop group")
    func twoApps() async throws {
        let rides = TestKey(teamID: "TEAMRIDES1", keyID: "KEYRIDES01")
        let scores = TestKey(teamID: "TEAMSCORE1", keyID: "KEYSCORE01")
        let simulator = try APNsSimulator(configuration: .init(trustedKeys: [rides.trusted, scores.trusted]))
        let port = try await simulator.start()
        let endpoint = APNsEndpoint(host: "127.0.0.1", port: port, trust: .pem(simulator.certificatePEM))
        func client(_ bundleID: String, _ key: TestKey) throws -> APNsClient {
            try APNsClient(
                configuration: .init(
                    bundleID: bundleID,
                    teamID: key.teamID,
                    keyID: key.keyID,
                    privateKeyPEM: key.privateKeyPEM,
                    endpoint: endpoint
                )
            )
        }
        let ridesClient = try client("com.example.rides", rides)
        let scoresClient = try client("com.example.scores", scores)
        let token = randomDeviceToken()
        _ = try await ridesClient.send(APNsLiveActivityPush(deviceToken: token, payload: liveActivityPayload(), priority: .low))
        _ = try await scoresClient.send(APNsLiveActivityPush(deviceToken: token, payload: liveActivityPayload(), priority: .high))
        let topics = simulator.deliveries(toDevice: token).map(\.topic)
        #expect(topics == ["com.example.rides.push-type.liveactivity", "com.example.scores.push-type.liveactivity"])
        #expect(ridesClient.tokenSigner.currentToken() != scoresClient.tokenSigner.currentToken())
        await ridesClient.shutdown()
        await scoresClient.shutdown()
        try await simulator.stop()
    }
}
