import Foundation
import Hummingbird
import HummingbirdTesting
import LivelineAPI
import LivelineStore
import Testing

@testable import LivelineAPI

/// The api's limits: how often a user and the app may call (429 with `Retry-After`), how
/// large a body may be (413), and how many devices and follows a user may keep (409, with
/// nothing written). Each refusal is counted by route and limit.
@Suite("Limits")
struct LimitTests {
    static func sample(_ metrics: String, _ parts: String...) -> Double? {
        metrics.split(separator: "\n")
            .first { line in line.hasPrefix("liveline_api_refusals_total{") && parts.allSatisfy { line.contains($0) } }
            .flatMap { $0.split(separator: " ").last.flatMap { Double($0) } }
    }

    @Test func aUserPastTheirRequestLimitIsToldWhenToComeBack() async throws {
        try await APIHarness.run(limits: APILimits(userRequestsPerMinute: 3)) { api in
            let jwt = try await APIHarness.token(user: "u-1")
            for _ in 0..<3 {
                try await api.client.execute(uri: "/v1/follows", method: .get, headers: APIHarness.bearer(jwt)) { response in
                    #expect(response.status == .ok)
                }
            }
            try await api.client.execute(uri: "/v1/follows", method: .get, headers: APIHarness.bearer(jwt)) { response in
                #expect(response.status == .tooManyRequests)
                #expect(APIHarness.errorCode(response) == "rate-limited")
                // Three a minute: one comes back every 20 s.
                let retryAfter = response.headers[.retryAfter].flatMap(Int.init)
                #expect(retryAfter.map { (1...20).contains($0) } == true, "Retry-After: \(String(describing: retryAfter))")
                #expect(String(buffer: response.body).contains("liveline.api.limits.user-requests-per-minute"))
            }
            // Another user has their own allowance.
            let other = try await APIHarness.token(user: "u-2")
            try await api.client.execute(uri: "/v1/follows", method: .get, headers: APIHarness.bearer(other)) { response in
                #expect(response.status == .ok)
            }
            try await api.client.execute(uri: "/metrics", method: .get) { response in
                let metrics = String(buffer: response.body)
                #expect(Self.sample(metrics, #"route="/v1/follows""#, #"reason="user-requests""#) == 1)
            }
        }
    }

    @Test func aBodyPastTheMaximumIsRefusedAndCounted() async throws {
        try await APIHarness.run { api in
            let jwt = try await APIHarness.token()
            let padding = String(repeating: " ", count: 17 * 1024)
            try await api.client.execute(
                uri: "/v1/push-to-start-tokens/RideAttributes", method: .put, headers: APIHarness.jsonHeaders(jwt),
                body: ByteBuffer(string: #"{"token":"\#(APIHarness.deviceToken)"\#(padding)}"#)
            ) { response in
                #expect(response.status == .contentTooLarge)
                #expect(APIHarness.errorCode(response) == "body-too-large")
            }
            #expect(try await api.store.pushToStartDevices(userID: "u-1").isEmpty)
            try await api.client.execute(uri: "/metrics", method: .get) { response in
                let metrics = String(buffer: response.body)
                #expect(Self.sample(metrics, #"route="/v1/push-to-start-tokens/{attributesType}""#, #"reason="body-size""#) == 1)
            }
        }
    }

    @Test func aUserMayKeepTokensOnABoundedNumberOfDevices() async throws {
        try await APIHarness.run(limits: APILimits(devicesPerUser: 2)) { api in
            let jwt = try await APIHarness.token()
            func register(_ type: String, device: String) async throws -> (HTTPResponse.Status, String?) {
                try await api.client.execute(
                    uri: "/v1/push-to-start-tokens/\(type)/\(device)", method: .put, headers: APIHarness.jsonHeaders(jwt),
                    body: ByteBuffer(string: #"{"token":"\#(APIHarness.deviceToken)"}"#)
                ) { response in (response.status, APIHarness.errorCode(response)) }
            }
            #expect(try await register("RideAttributes", device: "phone").0 == .ok)
            #expect(try await register("RideAttributes", device: "ipad").0 == .ok)
            let refused = try await register("RideAttributes", device: "watch")
            #expect(refused.0 == .conflict && refused.1 == "too-many-devices")
            #expect(try await api.store.pushToStartDevices(userID: "u-1") == ["phone", "ipad"], "the refused device left nothing")
            // A device already counted registers again, and for another type.
            #expect(try await register("RideAttributes", device: "phone").0 == .ok)
            #expect(try await register("DeliveryAttributes", device: "ipad").0 == .ok)
            try await api.client.execute(uri: "/metrics", method: .get) { response in
                let metrics = String(buffer: response.body)
                #expect(Self.sample(metrics, #"route="/v1/push-to-start-tokens/{attributesType}/{deviceId}""#, #"reason="devices""#) == 1)
            }
        }
    }

    @Test func aUserMayFollowABoundedNumberOfTopics() async throws {
        try await APIHarness.run(limits: APILimits(followsPerUser: 2)) { api in
            let jwt = try await APIHarness.token()
            func follow(_ topic: String) async throws -> (HTTPResponse.Status, String?) {
                try await api.client.execute(uri: "/v1/follows/\(topic)", method: .put, headers: APIHarness.bearer(jwt)) { response in
                    (response.status, APIHarness.errorCode(response))
                }
            }
            #expect(try await follow("team:arsenal").0 == .created)
            #expect(try await follow("team:chelsea").0 == .created)
            let refused = try await follow("league:epl")
            #expect(refused.0 == .conflict && refused.1 == "too-many-follows")
            #expect(try await api.store.follows(userID: "u-1").map(\.topic) == ["team:arsenal", "team:chelsea"])
            #expect(try await follow("team:arsenal").0 == .ok, "following again is not a new follow")
        }
    }
}

/// The buckets on a clock the test turns.
@Suite struct RequestLimiterTests {
    final class Clock: @unchecked Sendable {
        var seconds = 1_000.0
    }

    @Test func aUsersBucketRefillsAtItsRate() {
        let clock = Clock()
        let limiter = RequestLimiter(APILimits(userRequestsPerMinute: 2, appRequestsPerSecond: 1_000)) { clock.seconds }
        #expect(limiter.admit(userID: "a") == nil)
        #expect(limiter.admit(userID: "a") == nil)
        #expect(limiter.admit(userID: "a") == .init(scope: .user, retryAfter: 30))
        clock.seconds += 20
        #expect(limiter.admit(userID: "a") == .init(scope: .user, retryAfter: 10), "a refusal takes nothing")
        clock.seconds += 10
        #expect(limiter.admit(userID: "a") == nil)
        #expect(limiter.admit(userID: "b") == nil)
    }

    @Test func theAppsBucketIsSharedAndARefusalCostsTheUserNothing() {
        let clock = Clock()
        let limiter = RequestLimiter(APILimits(userRequestsPerMinute: 1, appRequestsPerSecond: 2)) { clock.seconds }
        #expect(limiter.admit(userID: "a") == nil)
        #expect(limiter.admit(userID: "b") == nil)
        #expect(limiter.admit(userID: "c") == .init(scope: .app, retryAfter: 1))
        clock.seconds += 0.5
        #expect(limiter.admit(userID: "c") == nil, "c's own allowance was kept")
    }

    @Test func fullBucketsAreForgotten() {
        let clock = Clock()
        let limiter = RequestLimiter(APILimits(userRequestsPerMinute: 60)) { clock.seconds }
        for user in 0..<100 { #expect(limiter.admit(userID: "u-\(user)") == nil) }
        #expect(limiter.trackedUsers == 100)
        clock.seconds += 61
        #expect(limiter.admit(userID: "u-0") == nil)
        #expect(limiter.trackedUsers == 1)
    }
}
