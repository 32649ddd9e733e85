import APNsSimulator
import Foundation
import LivelineAPNs
import Testing

@Suite("Provider token (ES256 JWT)")
struct ProviderTokenTests {
    let key = TestKey(teamID: "TEAM123456", keyID: "KEY1234567")

    @Test("JWT shape: ES256 header with kid, iss and iat claims, raw 64-byte signature")
    func tokenShape() throws {
        let clock = ManualWallClock(now: Date(timeIntervalSince1970: 1_700_000_000.7))
        let signer = try APNsTokenSigner(teamID: key.teamID, keyID: key.keyID, privateKeyPEM: key.privateKeyPEM, clock: clock)
        let token = signer.currentToken()
        let parts = token.jwt.split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        func decode(_ part: String) -> Data {
            var base64 = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while base64.count % 4 != 0 { base64 += "=" }
            return Data(base64Encoded: base64)!
        }
        #expect(String(decoding: decode(parts[0]), as: UTF8.self) == #"{"alg":"ES256","kid":"KEY1234567"}"#)
        #expect(String(decoding: decode(parts[1]), as: UTF8.self) == #"{"iss":"TEAM123456","iat":1700000000}"#)
        #expect(decode(parts[2]).count == 64)
        #expect(!token.description.contains(token.jwt), "the token must never appear in logs")
    }

    @Test("cadence: reused under 50 min, refreshed after, never twice within 20 min")
    func cadence() throws {
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        let clock = ManualWallClock(now: start)
        let signer = try APNsTokenSigner(teamID: key.teamID, keyID: key.keyID, privateKeyPEM: key.privateKeyPEM, clock: clock)
        let first = signer.currentToken()
        clock.advance(by: 49 * 60)
        #expect(signer.currentToken() == first)
        #expect(signer.mintCount == 1)

        clock.advance(by: 60)  // 50 min
        let second = signer.currentToken()
        #expect(second != first)
        #expect(second.issuedAt == start.addingTimeInterval(50 * 60))
        #expect(signer.mintCount == 2)

        // ExpiredProviderToken 5 minutes after minting: inside the 20-minute floor, no new token.
        clock.advance(by: 5 * 60)
        #expect(signer.invalidate(ifIssuedAt: second.issuedAt))
        #expect(signer.currentToken() == second)
        #expect(signer.mintCount == 2)

        // Past the floor the pending invalidation takes effect, once.
        clock.advance(by: 15 * 60)
        let third = signer.currentToken()
        #expect(third != second)
        #expect(signer.mintCount == 3)
        // A late report about the old token changes nothing.
        #expect(!signer.invalidate(ifIssuedAt: second.issuedAt))
        #expect(signer.currentToken() == third)
        #expect(signer.mintCount == 3)
    }

    @Test("403 ExpiredProviderToken → one refresh and a successful retry")
    func expiredProviderTokenRefreshesOnce() async throws {
        // The simulator checks iat against real time; start the client's clock 61 minutes in the past
        // so its first token is already expired for the simulator.
        let clock = ManualWallClock(now: Date().addingTimeInterval(-61 * 60))
        try await withSimulatorAndClient(key: key, clock: clock) { simulator, client in
            _ = client.tokenSigner.currentToken()
            #expect(client.tokenSigner.mintCount == 1)
            clock.advance(by: 21 * 60)  // old token is 21 min old for us (allowed to refresh), 61+ for APNs

            let tokens = (0..<20).map { _ in randomDeviceToken() }
            let results = await withTaskGroup(of: Result<APNsResponse, APNsError>.self) { group in
                for token in tokens {
                    group.addTask {
                        await outcome(of: APNsLiveActivityPush(deviceToken: token, payload: liveActivityPayload(), priority: .low), via: client)
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.allSatisfy { (try? $0.get()) != nil })
            #expect(client.tokenSigner.mintCount == 2, "twenty concurrent ExpiredProviderToken answers cause exactly one refresh")
            #expect(simulator.statistics.responsesByStatus[403, default: 0] >= 1)
            #expect(tokens.allSatisfy { simulator.deliveries(toDevice: $0).count == 1 })
        }
    }

    @Test("ExpiredProviderToken inside the 20-minute floor is reported, not retried")
    func expiredInsideFloorIsReported() async throws {
        let clock = ManualWallClock(now: Date().addingTimeInterval(-61 * 60))
        try await withSimulatorAndClient(key: key, clock: clock) { _, client in
            let result = await outcome(
                of: APNsLiveActivityPush(deviceToken: randomDeviceToken(), payload: liveActivityPayload(), priority: .low),
                via: client
            )
            guard case .failure(let error) = result else {
                Issue.record("expected ExpiredProviderToken")
                return
            }
            #expect(error.reason == .expiredProviderToken)
            #expect(error.outcome == .providerToken)
            #expect(client.tokenSigner.mintCount == 1)
        }
    }

    @Test("the simulator verifies the signature with the team's public key")
    func signatureIsVerified() async throws {
        let impostor = TestKey(teamID: key.teamID, keyID: key.keyID)  // same ids, different key
        var configuration = APNsSimulatorConfiguration()
        configuration.trustedKeys = [key.trusted]
        try await withSimulatorAndClient(simulator: configuration, key: impostor, trustKey: false) { simulator, client in
            let token = randomDeviceToken()
            let result = await outcome(of: APNsLiveActivityPush(deviceToken: token, payload: liveActivityPayload(), priority: .low), via: client)
            guard case .failure(let error) = result else {
                Issue.record("expected InvalidProviderToken")
                return
            }
            #expect(error.status == 403)
            #expect(error.reason == .invalidProviderToken)
            #expect(error.outcome == .providerToken)
            #expect(simulator.deliveries(toDevice: token).isEmpty)
        }
    }
}
