import Foundation
import Hummingbird
import HummingbirdTesting
import LivelineAPI
import LivelineStore
import Testing

@Suite("Follow routes")
struct FollowRouteTests {
    /// A user follows and unfollows topics; each user sees only their own; following twice
    /// is harmless; and the store's audience sees the follow at once.
    @Test func followingAndUnfollowingTopics() async throws {
        try await APIHarness.run { api in
            let jwt = try await APIHarness.token(user: "u-1")
            try await api.client.execute(uri: "/v1/follows/team:arsenal", method: .put, headers: APIHarness.bearer(jwt)) { response in
                #expect(response.status == .created)
                #expect(APIHarness.json(response)["topic"] as? String == "team:arsenal")
            }
            try await api.client.execute(uri: "/v1/follows/team:arsenal", method: .put, headers: APIHarness.bearer(jwt)) { response in
                #expect(response.status == .ok, "already followed")
            }
            try await api.client.execute(uri: "/v1/follows/league:epl", method: .put, headers: APIHarness.bearer(jwt)) { response in
                #expect(response.status == .created)
            }
            try await api.client.execute(uri: "/v1/follows", method: .get, headers: APIHarness.bearer(jwt)) { response in
                #expect(response.status == .ok)
                let follows = APIHarness.json(response)["follows"] as? [[String: Any]] ?? []
                #expect(follows.compactMap { $0["topic"] as? String } == ["league:epl", "team:arsenal"])
                #expect(follows.allSatisfy { $0["followedAt"] is String })
            }
            let other = try await APIHarness.token(user: "u-2")
            try await api.client.execute(uri: "/v1/follows", method: .get, headers: APIHarness.bearer(other)) { response in
                #expect((APIHarness.json(response)["follows"] as? [Any])?.isEmpty == true)
            }
            try await api.store.registerPushToStartToken(PushToStartToken(
                userID: "u-1", attributesType: "ScoreAttributes", token: APIHarness.deviceToken, registeredAt: Date()))
            #expect(try await api.store.audience(topics: ["team:arsenal"], attributesType: "ScoreAttributes").map(\.userID) == ["u-1"])

            try await api.client.execute(uri: "/v1/follows/team:arsenal", method: .delete, headers: APIHarness.bearer(jwt)) { response in
                #expect(response.status == .noContent)
            }
            try await api.client.execute(uri: "/v1/follows/team:arsenal", method: .delete, headers: APIHarness.bearer(jwt)) { response in
                #expect(response.status == .notFound)
            }
            #expect(try await api.store.audience(topics: ["team:arsenal"], attributesType: "ScoreAttributes").isEmpty)
        }
    }

    /// A topic is `<kind>:<id>` with a kind the deployment knows; anything else is refused
    /// with a clear error and nothing is stored. Calls need a valid token.
    @Test func unknownOrMalformedTopicsAreRefused() async throws {
        try await APIHarness.run { api in
            let jwt = try await APIHarness.token()
            try await api.client.execute(uri: "/v1/follows/planet:mars", method: .put, headers: APIHarness.bearer(jwt)) { response in
                #expect(response.status == .notFound)
                #expect(String(buffer: response.body).contains("unknown topic kind 'planet'"))
            }
            for bad in ["arsenal", "team:", ":arsenal", "team%20a:x"] {
                try await api.client.execute(uri: "/v1/follows/\(bad)", method: .put, headers: APIHarness.bearer(jwt)) { response in
                    #expect(response.status == .badRequest, "\(bad)")
                    #expect(APIHarness.errorCode(response) == "invalid-parameter")
                }
            }
            try await api.client.execute(uri: "/v1/follows/team:arsenal", method: .put) { response in
                #expect(response.status == .unauthorized)
            }
            #expect(try await api.store.follows(userID: "u-1").isEmpty)
        }
    }
}
