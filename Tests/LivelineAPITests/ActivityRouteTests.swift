import Foundation
import Hummingbird
import HummingbirdTesting
import LivelineAPI
import LivelineCore
import LivelineStore
import Testing

@Suite("Activity, preference and channel routes")
struct ActivityRouteTests {
    /// A game is shared: any user may read its state and subscribe a device's update token
    /// (a device too old for its channel); two fans' devices named alike stay apart. A
    /// personal activity stays its owner's: 403 for anyone else.
    @Test func anyoneMayFollowASharedActivityButNotAPersonalOne() async throws {
        try await APIHarness.run { api in
            let state = #"{"awayScore":0,"clock":"12'","homeScore":1,"period":"1st half","status":"live"}"#
            _ = try await api.store.applyChanges([
                ActivityChange(activityID: "g-1", domain: "score", attributesType: "ScoreAttributes", userID: "",
                               contentState: state, eventTime: Date(millisecondsSince1970: 1_800_000_000_000)),
                ActivityChange(activityID: "r-1", domain: "ride", attributesType: "RideAttributes", userID: "u-1",
                               contentState: "{}", eventTime: Date(millisecondsSince1970: 1_800_000_000_000)),
            ])
            for (user, token) in [("u-2", String(repeating: "02", count: 32)), ("u-3", String(repeating: "03", count: 32))] {
                let jwt = try await APIHarness.token(user: user)
                try await api.client.execute(
                    uri: "/v1/activities/g-1/tokens/phone", method: .put, headers: APIHarness.jsonHeaders(jwt),
                    body: ByteBuffer(string: #"{"token":"\#(token)"}"#)
                ) { #expect($0.status == .created, "\(user)") }
                try await api.client.execute(uri: "/v1/activities/g-1", method: .get, headers: APIHarness.bearer(jwt)) { response in
                    #expect(response.status == .ok)
                    #expect(String(buffer: response.body).hasSuffix(#","contentState":\#(state)}"#))
                }
            }
            let request = SnapshotRequest(activityID: "g-1", userID: "", attributesType: "ScoreAttributes")
            let tokens = try #require(try await api.store.loadSnapshots([request])["g-1"]?.updateTokens)
            #expect(tokens.map(\.deviceID) == ["u-2/phone", "u-3/phone"])

            let stranger = try await APIHarness.token(user: "u-2")
            try await api.client.execute(
                uri: "/v1/activities/r-1/tokens/phone", method: .put, headers: APIHarness.jsonHeaders(stranger),
                body: ByteBuffer(string: #"{"token":"\#(String(repeating: "02", count: 32))"}"#)
            ) { #expect($0.status == .forbidden) }
            try await api.client.execute(uri: "/v1/activities/r-1", method: .get, headers: APIHarness.bearer(stranger)) {
                #expect($0.status == .forbidden)
            }
            try await api.client.execute(uri: "/v1/activities/g-1/tokens/phone", method: .delete, headers: APIHarness.bearer(stranger)) {
                #expect($0.status == .noContent)
            }
            try await api.client.execute(uri: "/v1/activities/g-1/tokens/phone", method: .delete, headers: APIHarness.bearer(stranger)) {
                #expect($0.status == .notFound)
            }
            #expect(try await api.store.loadSnapshots([request])["g-1"]?.updateTokens.map(\.deviceID) == ["u-3/phone"])
        }
    }

    @Test func reconciliationReturnsTheLatestStateByteForByte() async throws {
        try await APIHarness.run { api in
            let state = #"{"eta":[784111111.5,784111711.25],"status":"driverAssigned"}"#
            _ = try await api.store.applyChanges([ActivityChange(
                activityID: "r-1", domain: "ride", attributesType: "RideAttributes", userID: "u-1",
                contentState: state, eventTime: Date(millisecondsSince1970: 1_800_000_000_123))])
            let jwt = try await APIHarness.token()
            try await api.client.execute(uri: "/v1/activities/r-1", method: .get, headers: APIHarness.bearer(jwt)) { response in
                #expect(response.status == .ok)
                let text = String(buffer: response.body)
                #expect(text.hasSuffix(#","contentState":\#(state)}"#))
                let json = APIHarness.json(response)
                #expect(json["status"] as? String == "active")
                #expect(json["activityId"] as? String == "r-1")
                #expect(json["lastEventAt"] as? String == "2027-01-15T08:00:00.123Z")
            }
            try await api.client.execute(uri: "/v1/activities/none", method: .get, headers: APIHarness.bearer(jwt)) { response in
                #expect(response.status == .notFound)
            }
        }
    }

    @Test func aPendingActivityHasNoStateYet() async throws {
        try await APIHarness.run { api in
            let jwt = try await APIHarness.token()
            try await api.client.execute(
                uri: "/v1/activities/early/tokens/phone", method: .put, headers: APIHarness.jsonHeaders(jwt),
                body: ByteBuffer(string: #"{"token":"\#(APIHarness.deviceToken)"}"#)
            ) { #expect($0.status == .created) }
            try await api.client.execute(uri: "/v1/activities/early", method: .get, headers: APIHarness.bearer(jwt)) { response in
                let json = APIHarness.json(response)
                #expect(json["status"] as? String == "pending")
                #expect(json["contentState"] is NSNull)
            }
        }
    }

    @Test func preferencesDefaultAndReplace() async throws {
        try await APIHarness.run { api in
            let jwt = try await APIHarness.token()
            try await api.client.execute(uri: "/v1/preferences", method: .get, headers: APIHarness.bearer(jwt)) { response in
                #expect(String(buffer: response.body) == #"{"activitiesEnabled":true,"frequentPushesEnabled":false}"#)
            }
            try await api.client.execute(
                uri: "/v1/preferences", method: .put, headers: APIHarness.jsonHeaders(jwt),
                body: ByteBuffer(string: #"{"activitiesEnabled":false,"frequentPushesEnabled":true}"#)
            ) { #expect($0.status == .ok) }
            #expect(try await api.store.preferences(userID: "u-1") == UserPreferences(activitiesEnabled: false, frequentPushesEnabled: true))
            try await api.client.execute(
                uri: "/v1/preferences", method: .put, headers: APIHarness.jsonHeaders(jwt),
                body: ByteBuffer(string: #"{"activitiesEnabled":"yes"}"#)
            ) { response in
                #expect(response.status == .badRequest)
                #expect(APIHarness.errorCode(response) == "malformed-body")
            }
        }
    }

    @Test func channelLookup() async throws {
        try await APIHarness.run { api in
            let jwt = try await APIHarness.token()
            let path = "/v1/channels/score/game-7"
            try await api.client.execute(uri: path, method: .get, headers: APIHarness.bearer(jwt)) { response in
                #expect(response.status == .notFound)
            }
            _ = try await api.store.createChannel(
                BroadcastChannel(domain: "score", key: "game-7", channelID: "dHN0MTIzNDU2Nzg5MA==", createdAt: Date()))
            try await api.client.execute(uri: path, method: .get, headers: APIHarness.bearer(jwt)) { response in
                #expect(response.status == .ok)
                #expect(APIHarness.json(response)["channelId"] as? String == "dHN0MTIzNDU2Nzg5MA==")
            }
            _ = try await api.store.markChannelDeleted(domain: "score", key: "game-7", at: Date())
            try await api.client.execute(uri: path, method: .get, headers: APIHarness.bearer(jwt)) { response in
                #expect(response.status == .notFound)
            }
        }
    }
}
