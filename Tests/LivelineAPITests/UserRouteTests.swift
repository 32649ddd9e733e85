import Foundation
import HummingbirdTesting
import LivelineAPI
import LivelineStore
import Testing

@Suite("DELETE /v1/me")
struct UserRouteTests {
    /// The caller's tokens, follows and preferences go, with counts; again, nothing more;
    /// another user keeps theirs.
    @Test func aUserErasesThemselvesWithTheirOwnToken() async throws {
        try await APIHarness.run(erasure: true) { api in
            for user in ["u-1", "u-2"] {
                let jwt = try await APIHarness.token(user: user)
                try await api.client.execute(
                    uri: "/v1/push-to-start-tokens/ScoreAttributes/phone", method: .put, headers: APIHarness.jsonHeaders(jwt),
                    body: TokenRouteTests.body()) { #expect($0.status == .ok) }
                try await api.client.execute(
                    uri: "/v1/follows/team:ars", method: .put, headers: APIHarness.bearer(jwt)) { #expect($0.status == .created) }
            }
            let jwt = try await APIHarness.token(user: "u-1")
            try await api.client.execute(uri: "/v1/me", method: .delete, headers: APIHarness.bearer(jwt)) { response in
                #expect(response.status == .ok)
                let removed = APIHarness.json(response)["removed"] as? [String: Any]
                #expect(APIHarness.json(response)["ended"] as? Int == 0)
                #expect(removed?["pushToStartTokens"] as? Int == 1 && removed?["follows"] as? Int == 1, "\(String(describing: removed))")
            }
            try await api.client.execute(uri: "/v1/me", method: .delete, headers: APIHarness.bearer(jwt)) { response in
                #expect(response.status == .ok)
                let removed = APIHarness.json(response)["removed"] as? [String: Any]
                #expect(removed?.values.allSatisfy { $0 as? Int == 0 } == true, "idempotent: \(String(describing: removed))")
            }
            #expect(try await api.store.follows(userID: "u-1").isEmpty)
            #expect(try await api.store.follows(userID: "u-2").count == 1)
            try await api.client.execute(uri: "/v1/me", method: .delete) { #expect($0.status == .unauthorized) }
        }
    }

    @Test func withoutAnErasureTheApiSaysItIsUnavailable() async throws {
        try await APIHarness.run { api in
            let jwt = try await APIHarness.token()
            try await api.client.execute(uri: "/v1/me", method: .delete, headers: APIHarness.bearer(jwt)) { response in
                #expect(response.status == .serviceUnavailable)
            }
        }
    }
}
