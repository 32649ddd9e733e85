import APNsSimulator
import Foundation
import LivelineAPNs
import Testing

@Suite("Device pushes over HTTP/2 + TLS")
struct DevicePushTests {
    @Test("200: apns-id echoed, headers and payload recorded exactly")
    func successIsRecordedExactly() async throws {
        try await withSimulatorAndClient { simulator, client in
            let token = randomDeviceToken()
            let id = UUID()
            let payload = liveActivityPayload()
            let expiration = Date(timeIntervalSince1970: 1_900_000_000)
            let response = try await client.send(
                APNsLiveActivityPush(
                    deviceToken: token,
                    payload: payload,
                    priority: .high,
                    expiration: .at(expiration),
                    apnsID: id
                )
            )
            #expect(response.status == 200)
            #expect(response.apnsID == id.uuidString)
            #expect(response.uniqueID != nil)

            let received = simulator.deliveries(toDevice: token)
            #expect(received.count == 1)
            let delivery = try #require(received.first)
            #expect(delivery.payload == payload)
            #expect(delivery.priority == 10)
            #expect(delivery.pushType == "liveactivity")
            #expect(delivery.topic == "com.example.rides.push-type.liveactivity")
            #expect(delivery.apnsID == id.uuidString)
            #expect(delivery.headers["apns-push-type"] == "liveactivity")
            #expect(delivery.headers["apns-topic"] == "com.example.rides.push-type.liveactivity")
            #expect(delivery.headers["apns-priority"] == "10")
            #expect(delivery.headers["apns-expiration"] == "1900000000")
            #expect(delivery.headers["apns-id"] == id.uuidString)
            #expect(delivery.headers["authorization"] == nil, "the simulator never keeps bearer tokens")
        }
    }

    @Test("pushes to one device are recorded in order with their priorities")
    func deliveriesKeepOrder() async throws {
        try await withSimulatorAndClient { simulator, client in
            let token = randomDeviceToken()
            for eta in [600, 540, 480] {
                _ = try await client.send(
                    APNsLiveActivityPush(
                        deviceToken: token,
                        payload: liveActivityPayload(eta: eta),
                        priority: eta == 480 ? .high : .low
                    )
                )
            }
            let received = simulator.deliveries(toDevice: token)
            #expect(received.map(\.priority) == [5, 5, 10])
            #expect(received.map { $0.payloadString.contains("\"etaStartSeconds\":600") } == [true, false, false])
        }
    }

    struct FaultCase: Sendable, CustomTestStringConvertible {
        let fault: APNsSimulatorFault
        let status: Int
        let reason: APNsReason
        let outcome: APNsOutcome
        var testDescription: String { "\(status) \(reason)" }
    }

    @Test(
        "each APNs answer maps to the right reason and outcome",
        arguments: [
            FaultCase(fault: .unregistered, status: 410, reason: .unregistered, outcome: .tokenInvalid),
            FaultCase(fault: .badDeviceToken, status: 400, reason: .badDeviceToken, outcome: .tokenInvalid),
            FaultCase(fault: .deviceTokenNotForTopic, status: 400, reason: .deviceTokenNotForTopic, outcome: .tokenInvalid),
            FaultCase(fault: .tooManyRequests, status: 429, reason: .tooManyRequests, outcome: .throttled),
            FaultCase(fault: .internalServerError, status: 500, reason: .internalServerError, outcome: .retriable),
            FaultCase(fault: .serviceUnavailable, status: 503, reason: .serviceUnavailable, outcome: .retriable),
            FaultCase(fault: .status(400, reason: "BadCollapseId"), status: 400, reason: .badCollapseID, outcome: .permanent),
            FaultCase(fault: .status(403, reason: "Forbidden"), status: 403, reason: .forbidden, outcome: .providerToken),
            FaultCase(fault: .status(400, reason: "SomethingNew"), status: 400, reason: .unknown("SomethingNew"), outcome: .permanent),
        ]
    )
    func faultOutcomes(_ testCase: FaultCase) async throws {
        try await withSimulatorAndClient { simulator, client in
            let token = randomDeviceToken()
            simulator.injectFault(testCase.fault, forDevice: token)
            let id = UUID()
            let before = Date()
            let result = await outcome(
                of: APNsLiveActivityPush(deviceToken: token, payload: liveActivityPayload(), priority: .low, apnsID: id),
                via: client
            )
            let after = Date()
            guard case .failure(let error) = result else {
                Issue.record("expected a failure")
                return
            }
            #expect(error.status == testCase.status)
            #expect(error.reason == testCase.reason)
            #expect(error.outcome == testCase.outcome)
            #expect(error.apnsID == id.uuidString)
            if testCase.status == 410 {
                // Stamped while the request was in flight (to the second or the millisecond): a
                // fixed bound from `before` failed on a loaded machine (5.3 s against 5).
                let timestamp = try #require(error.timestamp)
                #expect(timestamp.timeIntervalSince(before) > -1 && timestamp.timeIntervalSince(after) < 1, "\(timestamp)")
            } else {
                #expect(error.timestamp == nil)
            }
            #expect(simulator.deliveries(toDevice: token).isEmpty)
        }
    }

    @Test("413 PayloadTooLarge is permanent; nothing is delivered")
    func payloadTooLarge() async throws {
        try await withSimulatorAndClient { simulator, client in
            let token = randomDeviceToken()
            let big = Array(#"{"aps":{"alert":""#.utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: 4100) + Array(#""}}"#.utf8)
            let result = await outcome(of: APNsLiveActivityPush(deviceToken: token, payload: big, priority: .low), via: client)
            guard case .failure(let error) = result else {
                Issue.record("expected 413")
                return
            }
            #expect(error.status == 413)
            #expect(error.reason == .payloadTooLarge)
            #expect(error.outcome == .permanent)
            #expect(simulator.deliveries(toDevice: token).isEmpty)
        }
    }

    @Test("the simulator validates token format, payload and priority like APNs")
    func simulatorValidation() async throws {
        try await withSimulatorAndClient { _, client in
            let short = await outcome(
                of: APNsLiveActivityPush(deviceToken: "abc123", payload: liveActivityPayload(), priority: .low),
                via: client
            )
            #expect((try? short.get()) == nil)
            if case .failure(let error) = short {
                #expect(error.reason == .badDeviceToken)
                #expect(error.outcome == .tokenInvalid)
            }
            let malformed = await outcome(
                of: APNsLiveActivityPush(deviceToken: "not a token\r\n", payload: liveActivityPayload(), priority: .low),
                via: client
            )
            if case .failure(let error) = malformed {
                #expect(error.reason == .badDeviceToken)
                #expect(error.status == nil, "refused by the client, never sent")
            } else {
                Issue.record("expected a local refusal")
            }
            let empty = await outcome(
                of: APNsLiveActivityPush(deviceToken: randomDeviceToken(), payload: [], priority: .low),
                via: client
            )
            if case .failure(let error) = empty {
                #expect(error.reason == .payloadEmpty)
                #expect(error.outcome == .permanent)
            } else {
                Issue.record("expected PayloadEmpty")
            }
        }
    }

    @Test("h2c (no TLS) works for a local simulator")
    func plaintext() async throws {
        try await withSimulatorAndClient(simulator: .init(useTLS: false)) { simulator, client in
            let token = randomDeviceToken()
            _ = try await client.send(APNsLiveActivityPush(deviceToken: token, payload: liveActivityPayload(), priority: .low))
            #expect(simulator.deliveries(toDevice: token).count == 1)
        }
    }
}
