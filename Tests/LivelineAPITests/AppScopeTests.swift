import Foundation
import Hummingbird
import HummingbirdTesting
import LivelineAPI
import LivelineStore
import Testing

/// Each JWT is for one app (its `app` claim; none, the default app): the same ids in two apps
/// are two activities, two users and two follows, and another app's domains are forbidden.
@Suite("Apps kept apart in the api")
struct AppScopeTests {
    static let rides = "com.example.liveline"
    static let eats = "com.example.eats"
    /// Rides and deliveries for both apps; the games for the default app alone.
    static let apps = APIApps(
        defaultApp: rides, appsOfDomain: ["ride": [rides, eats], "delivery": [rides, eats], "score": [rides]],
        appsOfAttributesType: ["RideAttributes": [rides, eats], "DeliveryAttributes": [rides, eats], "ScoreAttributes": [rides]])

    static func body(_ json: String) -> ByteBuffer { ByteBuffer(string: json) }

    @Test func theSameIdsInTwoAppsAreTwoActivitiesUsersAndFollows() async throws {
        try await APIHarness.run(apps: Self.apps) { api in
            let own = try await APIHarness.token(user: "u-1")
            let eats = try await APIHarness.token(user: "u-1", app: Self.eats)
            for jwt in [own, eats] {
                try await api.client.execute(
                    uri: "/v1/activities/r-1/tokens/phone", method: .put, headers: APIHarness.jsonHeaders(jwt),
                    body: Self.body(#"{"token":"\#(APIHarness.deviceToken)","domain":"ride","attributesType":"RideAttributes"}"#)
                ) { response in
                    #expect(response.status == .created, "a new activity in each app")
                    #expect(APIHarness.json(response)["activityId"] as? String == "r-1")
                }
            }
            #expect(try await api.store.activity(id: "r-1")?.userID == "u-1")
            #expect(try await api.store.activity(id: "com.example.eats/r-1")?.userID == "com.example.eats/u-1")
            try await api.client.execute(uri: "/v1/activities/r-1", method: .get, headers: APIHarness.bearer(eats)) { response in
                #expect(response.status == .ok)
                #expect(APIHarness.json(response)["activityId"] as? String == "r-1", "named as the app names it")
            }

            try await api.client.execute(
                uri: "/v1/preferences", method: .put, headers: APIHarness.jsonHeaders(eats),
                body: Self.body(#"{"activitiesEnabled":false,"frequentPushesEnabled":false}"#)
            ) { response in #expect(response.status == .ok) }
            try await api.client.execute(uri: "/v1/preferences", method: .get, headers: APIHarness.bearer(own)) { response in
                #expect(APIHarness.json(response)["activitiesEnabled"] as? Bool == true, "the other app's u-1 is another user")
            }
            #expect(try await api.store.preferences(userID: "com.example.eats/u-1").activitiesEnabled == false)

            try await api.client.execute(uri: "/v1/follows/team:arsenal", method: .put, headers: APIHarness.bearer(eats)) { response in
                #expect(response.status == .created)
            }
            try await api.client.execute(uri: "/v1/follows", method: .get, headers: APIHarness.bearer(eats)) { response in
                let follows = APIHarness.json(response)["follows"] as? [[String: Any]]
                #expect(follows?.compactMap { $0["topic"] as? String } == ["team:arsenal"])
            }
            #expect(try await api.store.follows(userID: "com.example.eats/u-1").map(\.topic) == ["com.example.eats/team:arsenal"])
            #expect(try await api.store.follows(userID: "u-1").isEmpty)
        }
    }

    @Test func aTokenOnAnotherAppsRoutesIsForbidden() async throws {
        try await APIHarness.run(apps: Self.apps) { api in
            let eats = try await APIHarness.token(user: "u-1", app: Self.eats)
            let forbidden: [(String, HTTPRequest.Method, String?)] = [
                ("/v1/channels/score/g-1", .get, nil),
                ("/v1/push-to-start-tokens/ScoreAttributes", .put, #"{"token":"\#(APIHarness.deviceToken)"}"#),
                ("/v1/activities/g-1/tokens/phone", .put, #"{"token":"\#(APIHarness.deviceToken)","domain":"score"}"#),
            ]
            for (path, method, body) in forbidden {
                try await api.client.execute(
                    uri: path, method: method, headers: APIHarness.jsonHeaders(eats), body: body.map(Self.body)
                ) { response in
                    #expect(response.status == .forbidden, "\(method) \(path)")
                    #expect(APIHarness.errorCode(response) == "forbidden")
                }
            }
            #expect(try await api.store.activity(id: "com.example.eats/g-1") == nil, "nothing written")
            #expect(try await api.store.pushToStartDevices(userID: "com.example.eats/u-1").isEmpty)

            let unserved = try await APIHarness.token(user: "u-1", app: "com.example.nope")
            try await api.client.execute(uri: "/v1/preferences", method: .get, headers: APIHarness.bearer(unserved)) { response in
                #expect(response.status == .forbidden)
            }
            let malformed = try await APIHarness.token(user: "u-1", app: "nope")
            try await api.client.execute(uri: "/v1/preferences", method: .get, headers: APIHarness.bearer(malformed)) { response in
                #expect(response.status == .unauthorized)
            }
            let own = try await APIHarness.token(user: "u-1")
            try await api.client.execute(
                uri: "/v1/push-to-start-tokens/ScoreAttributes", method: .put, headers: APIHarness.jsonHeaders(own),
                body: Self.body(#"{"token":"\#(APIHarness.deviceToken)"}"#)
            ) { response in #expect(response.status == .ok) }
        }
    }
}
