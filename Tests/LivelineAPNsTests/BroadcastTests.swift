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

    /// Apple's rules for a broadcast's `apns-expiration`: present, and 0 on a channel that
    /// stores no message; a channel that stores the latest message takes a date.
    @Test func broadcastExpirationAgreesWithTheChannelsStoragePolicy() async throws {
        try await withSimulatorAndClient(bundleID: "com.example.scores") { simulator, client in
            let storesNothing = try await client.createChannel(storagePolicy: .noMessageStored)
            let storesLatest = try await client.createChannel(storagePolicy: .mostRecentMessageStored)
            let later = APNsExpiration.at(Date().addingTimeInterval(600))
            for (channel, expiration, accepted) in [
                (storesNothing, APNsExpiration?.none, false), (storesNothing, later, false), (storesNothing, .immediately, true),
                (storesLatest, nil, false), (storesLatest, later, true), (storesLatest, .immediately, true),
            ] {
                do {
                    _ = try await client.broadcast(APNsBroadcastPush(
                        channelID: channel, payload: liveActivityPayload(), priority: .low, expiration: expiration))
                    #expect(accepted, "\(channel) \(String(describing: expiration))")
                } catch let error as APNsError {
                    #expect(!accepted && error.status == 400 && error.reason == .badExpirationDate)
                }
            }
            #expect(simulator.deliveries(toChannel: storesNothing).count == 1)
            #expect(simulator.deliveries(toChannel: storesLatest).count == 2)
        }
    }

    /// A start with `input-push-channel` makes that device listen: each broadcast shows on
    /// `/_sim/devices/<token>` until one ends the activity; another device never sees them.
    @Test func aStartIntoAChannelMakesTheDeviceListenUntilTheEnd() async throws {
        try await withSimulatorAndClient(bundleID: "com.example.scores") { simulator, client in
            let channel = try await client.createChannel()
            let fan = String(repeating: "ab", count: 32), other = String(repeating: "cd", count: 32)
            let now = Int(Date().timeIntervalSince1970)
            func payload(_ event: String, extra: String = "") -> [UInt8] {
                Array(#"{"aps":{"event":"\#(event)","timestamp":\#(now),"content-state":{"homeScore":1}\#(extra)}}"#.utf8)
            }
            _ = try await client.send(APNsLiveActivityPush(
                deviceToken: fan, payload: payload("start", extra: #","input-push-channel":"\#(channel)""#), priority: .high))
            _ = try await client.send(APNsLiveActivityPush(
                deviceToken: other, payload: payload("start", extra: #","input-push-token":1"#), priority: .high))
            for event in ["update", "end", "update"] {
                _ = try await client.broadcast(APNsBroadcastPush(
                    channelID: channel, payload: payload(event), priority: .high, expiration: .immediately))
            }
            let seen = simulator.deliveries(toDevice: fan).map { String(decoding: $0.payload, as: UTF8.self) }
            #expect(seen.count == 3, "the start, the update and the end; nothing after the end")
            #expect(seen.dropFirst().map { $0.contains(#""event":"update""#) } == [true, false])
            #expect(simulator.deliveries(toDevice: fan).dropFirst().allSatisfy { $0.recipient == fan })
            #expect(simulator.deliveries(toDevice: other).count == 1)
            #expect(simulator.deliveries(toChannel: channel).count == 3)
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
