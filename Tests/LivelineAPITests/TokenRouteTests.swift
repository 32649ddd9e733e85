import Foundation
import Hummingbird
import HummingbirdTesting
import LivelineAPI
import LivelineStore
import Testing

@Suite("Token routes")
struct TokenRouteTests {
    static func body(token: String = APIHarness.deviceToken, extra: String = "") -> ByteBuffer {
        ByteBuffer(string: #"{"token":"\#(token)"\#(extra)}"#)
    }

    @Test func registeringRotatingAndRemovingAnUpdateToken() async throws {
        try await APIHarness.run { api in
            let jwt = try await APIHarness.token()
            let path = "/v1/activities/r-1/tokens/phone"
            try await api.client.execute(
                uri: path, method: .put, headers: APIHarness.jsonHeaders(jwt),
                body: Self.body(extra: #","domain":"ride","attributesType":"RideAttributes""#)
            ) { response in
                #expect(response.status == .created)
                let json = APIHarness.json(response)
                #expect(json["activityId"] as? String == "r-1")
                #expect(json["deviceId"] as? String == "phone")
                #expect(json["token"] == nil)
            }
            let rotated = String(repeating: "CD", count: 40)
            try await api.client.execute(
                uri: path, method: .put, headers: APIHarness.jsonHeaders(jwt), body: Self.body(token: rotated)
            ) { response in
                #expect(response.status == .ok)
            }
            let request = SnapshotRequest(activityID: "r-1", userID: "u-1", attributesType: "RideAttributes")
            let tokens = try #require(try await api.store.loadSnapshots([request])["r-1"]).updateTokens
            #expect(tokens.map(\.token) == [rotated.lowercased()])
            #expect(try await api.store.activity(id: "r-1")?.domain == "ride")

            try await api.client.execute(uri: path, method: .delete, headers: APIHarness.bearer(jwt)) { response in
                #expect(response.status == .noContent)
            }
            try await api.client.execute(uri: path, method: .delete, headers: APIHarness.bearer(jwt)) { response in
                #expect(response.status == .notFound)
                #expect(APIHarness.errorCode(response) == "not-found")
            }

            // The work shows in /metrics, by route template (never the ids) and status.
            try await api.client.execute(uri: "/metrics", method: .get) { response in
                let lines = String(buffer: response.body).split(separator: "\n")
                func sample(_ name: String, _ parts: String...) -> Double? {
                    lines.first { line in line.hasPrefix(name + "{") && parts.allSatisfy { line.contains($0) } }
                        .flatMap { $0.split(separator: " ").last.flatMap { Double($0) } }
                }
                let route = #"route="/v1/activities/{activityId}/tokens/{deviceId}""#
                #expect(sample("liveline_api_requests_total", #"method="PUT""#, route, #"status="201""#) == 1)
                #expect(sample("liveline_api_requests_total", #"method="PUT""#, route, #"status="200""#) == 1)
                #expect(sample("liveline_api_requests_total", #"method="DELETE""#, route, #"status="204""#) == 1)
                #expect(sample("liveline_api_requests_total", #"method="DELETE""#, route, #"status="404""#) == 1)
                #expect(sample("liveline_api_request_duration_seconds_count", route) == 4)
                #expect(!lines.contains { $0.contains("r-1") || $0.contains("phone") }, "no ids in the labels")
            }
        }
    }

    @Test func aTokenIsRegisteredWithItsEnvironment() async throws {
        try await APIHarness.run { api in
            let jwt = try await APIHarness.token()
            try await api.client.execute(
                uri: "/v1/activities/r-1/tokens/dev-build", method: .put, headers: APIHarness.jsonHeaders(jwt),
                body: Self.body(extra: #","environment":"sandbox","domain":"ride","attributesType":"RideAttributes""#)
            ) { response in
                #expect(response.status == .created)
                #expect(APIHarness.json(response)["environment"] as? String == "sandbox")
            }
            try await api.client.execute(
                uri: "/v1/activities/r-1/tokens/phone", method: .put, headers: APIHarness.jsonHeaders(jwt),
                body: Self.body(token: String(repeating: "cd", count: 32))
            ) { response in
                #expect(APIHarness.json(response)["environment"] as? String == "production", "the default")
            }
            try await api.client.execute(
                uri: "/v1/push-to-start-tokens/RideAttributes", method: .put, headers: APIHarness.jsonHeaders(jwt),
                body: Self.body(extra: #","environment":"sandbox""#)
            ) { response in
                #expect(response.status == .ok)
                #expect(APIHarness.json(response)["environment"] as? String == "sandbox")
            }
            let request = SnapshotRequest(activityID: "r-1", userID: "u-1", attributesType: "RideAttributes")
            let snapshot = try #require(try await api.store.loadSnapshots([request])["r-1"])
            #expect(snapshot.updateTokens.map(\.deviceID) == ["dev-build", "phone"])
            #expect(snapshot.updateTokens.map(\.environment) == [.sandbox, .production])
            #expect(snapshot.pushToStartTokens.map(\.environment) == [.sandbox])

            for path in ["/v1/activities/r-1/tokens/ipad", "/v1/push-to-start-tokens/ScoreAttributes"] {
                try await api.client.execute(
                    uri: path, method: .put, headers: APIHarness.jsonHeaders(jwt), body: Self.body(extra: #","environment":"staging""#)
                ) { response in
                    #expect(response.status.code == 422)
                    #expect(String(buffer: response.body).contains("production or sandbox"))
                }
            }
            #expect(try await api.store.loadSnapshots([request])["r-1"]?.updateTokens.count == 2, "nothing stored")
        }
    }

    /// A deployment that pushes to production only refuses a development build's sandbox
    /// token with 400 naming the environment and the setting, and stores nothing.
    @Test func aTokenOfAnEnvironmentTheDeploymentDoesNotServeIsRefused() async throws {
        try await APIHarness.run(tokenEnvironments: [.production]) { api in
            let jwt = try await APIHarness.token()
            for path in ["/v1/activities/r-1/tokens/dev-build", "/v1/push-to-start-tokens/RideAttributes/dev-build"] {
                try await api.client.execute(
                    uri: path, method: .put, headers: APIHarness.jsonHeaders(jwt),
                    body: Self.body(extra: #","environment":"sandbox","domain":"ride","attributesType":"RideAttributes""#)
                ) { response in
                    #expect(response.status == .badRequest)
                    let error = APIHarness.json(response)["error"] as? [String: Any]
                    #expect(error?["code"] as? String == "unserved")
                    let message = error?["message"] as? String ?? ""
                    #expect(message.contains("sandbox") && message.contains("liveline.api.token-environments"), "\(message)")
                }
            }
            try await api.client.execute(
                uri: "/v1/activities/r-1/tokens/phone", method: .put, headers: APIHarness.jsonHeaders(jwt), body: Self.body()
            ) { response in
                #expect(response.status == .created, "production is served")
            }
            let request = SnapshotRequest(activityID: "r-1", userID: "u-1", attributesType: "RideAttributes")
            let snapshot = try #require(try await api.store.loadSnapshots([request])["r-1"])
            #expect(snapshot.updateTokens.map(\.deviceID) == ["phone"])
            #expect(snapshot.pushToStartTokens.isEmpty)
        }
    }

    @Test func anotherUsersActivityIsForbidden() async throws {
        try await APIHarness.run { api in
            _ = try await api.store.applyChanges([ActivityChange(
                activityID: "theirs", domain: "ride", attributesType: "RideAttributes", userID: "u-2",
                contentState: "{}", eventTime: Date())])
            let jwt = try await APIHarness.token(user: "u-1")
            let path = "/v1/activities/theirs/tokens/phone"
            try await api.client.execute(uri: path, method: .put, headers: APIHarness.jsonHeaders(jwt), body: Self.body()) { response in
                #expect(response.status == .forbidden)
                #expect(APIHarness.errorCode(response) == "forbidden")
            }
            try await api.client.execute(uri: path, method: .delete, headers: APIHarness.bearer(jwt)) { response in
                #expect(response.status == .forbidden)
            }
            try await api.client.execute(uri: "/v1/activities/theirs", method: .get, headers: APIHarness.bearer(jwt)) { response in
                #expect(response.status == .forbidden)
            }
        }
    }

    @Test func anEndedActivityRefusesTokensWithAConflict() async throws {
        try await APIHarness.run { api in
            _ = try await api.store.applyChanges([ActivityChange(
                activityID: "done", domain: "ride", attributesType: "RideAttributes", userID: "u-1",
                contentState: "{}", eventTime: Date(), end: .init(at: Date(), reason: "completed"))])
            let jwt = try await APIHarness.token()
            try await api.client.execute(
                uri: "/v1/activities/done/tokens/phone", method: .put, headers: APIHarness.jsonHeaders(jwt), body: Self.body()
            ) { response in
                #expect(response.status == .conflict)
                #expect(APIHarness.errorCode(response) == "activity-ended")
            }
        }
    }

    @Test(arguments: [
        String(repeating: "ab", count: 31),  // too short
        String(repeating: "ab", count: 101),  // too long
        String(repeating: "a", count: 65),  // odd length
        String(repeating: "zz", count: 32),  // not hex
        "",
    ])
    func badTokensAreUnprocessable(token: String) async throws {
        try await APIHarness.run { api in
            let jwt = try await APIHarness.token()
            for path in ["/v1/activities/r-1/tokens/phone", "/v1/push-to-start-tokens/RideAttributes"] {
                try await api.client.execute(
                    uri: path, method: .put, headers: APIHarness.jsonHeaders(jwt), body: Self.body(token: token)
                ) { response in
                    #expect(response.status == .unprocessableContent)
                    #expect(APIHarness.errorCode(response) == "invalid-field")
                }
            }
        }
    }

    @Test func malformedBodiesAndParametersAreBadRequests() async throws {
        try await APIHarness.run { api in
            let jwt = try await APIHarness.token()
            let path = "/v1/activities/r-1/tokens/phone"
            for body in ["{", "[]", #"{"token":42}"#, #"{"domain":"ride"}"#, ""] {
                try await api.client.execute(
                    uri: path, method: .put, headers: APIHarness.jsonHeaders(jwt), body: ByteBuffer(string: body)
                ) { response in
                    #expect(response.status == .badRequest, "body \(body)")
                    #expect(APIHarness.errorCode(response) == "malformed-body")
                }
            }
            let longID = String(repeating: "a", count: 129)
            for badPath in ["/v1/activities/\(longID)/tokens/phone", "/v1/activities/r%201/tokens/phone", "/v1/activities/r-1/tokens/%3Cscript%3E"] {
                try await api.client.execute(
                    uri: badPath, method: .put, headers: APIHarness.jsonHeaders(jwt), body: Self.body()
                ) { response in
                    #expect(response.status == .badRequest, "path \(badPath)")
                    #expect(APIHarness.errorCode(response) == "invalid-parameter")
                }
            }
            try await api.client.execute(
                uri: path, method: .put, headers: APIHarness.jsonHeaders(jwt), body: Self.body(extra: #","domain":"no spaces""#)
            ) { response in
                #expect(response.status == .unprocessableContent)
            }
        }
    }

    @Test func wrongContentTypeAndOversizedBodiesAreRefused() async throws {
        try await APIHarness.run { api in
            let jwt = try await APIHarness.token()
            let path = "/v1/activities/r-1/tokens/phone"
            for contentType in [nil, "text/plain", "application/x-www-form-urlencoded"] {
                var headers = APIHarness.bearer(jwt)
                if let contentType { headers[.contentType] = contentType }
                try await api.client.execute(uri: path, method: .put, headers: headers, body: Self.body()) { response in
                    #expect(response.status == .unsupportedMediaType)
                    #expect(APIHarness.errorCode(response) == "unsupported-media-type")
                }
            }
            var headers = APIHarness.jsonHeaders(jwt)
            headers[.contentType] = "application/json; charset=utf-8"
            try await api.client.execute(uri: path, method: .put, headers: headers, body: Self.body()) { response in
                #expect(response.status == .created)
            }
            let padding = String(repeating: " ", count: 17 * 1024)
            try await api.client.execute(
                uri: path, method: .put, headers: APIHarness.jsonHeaders(jwt),
                body: ByteBuffer(string: #"{"token":"\#(APIHarness.deviceToken)"\#(padding)}"#)
            ) { response in
                #expect(response.status == .contentTooLarge)
                #expect(APIHarness.errorCode(response) == "body-too-large")
            }
        }
    }

    @Test func pushToStartTokens() async throws {
        try await APIHarness.run { api in
            let jwt = try await APIHarness.token()
            let path = "/v1/push-to-start-tokens/RideAttributes"
            try await api.client.execute(uri: path, method: .put, headers: APIHarness.jsonHeaders(jwt), body: Self.body()) { response in
                #expect(response.status == .ok)
                #expect(APIHarness.json(response)["attributesType"] as? String == "RideAttributes")
            }
            let request = SnapshotRequest(activityID: "x", userID: "u-1", attributesType: "RideAttributes")
            #expect(try await api.store.loadSnapshots([request])["x"]?.pushToStartTokens.map(\.token) == [APIHarness.deviceToken])
            try await api.client.execute(uri: path, method: .delete, headers: APIHarness.bearer(jwt)) { response in
                #expect(response.status == .noContent)
            }
            try await api.client.execute(uri: path, method: .delete, headers: APIHarness.bearer(jwt)) { response in
                #expect(response.status == .notFound)
            }
            try await api.client.execute(
                uri: "/v1/push-to-start-tokens/9Bad-Type", method: .put, headers: APIHarness.jsonHeaders(jwt), body: Self.body()
            ) { response in
                #expect(response.status == .badRequest)
            }
        }
    }

    /// Both kinds of token take the app's locale, stored as a language tag for alerts in the
    /// device's language, and the content-state version its app decodes; a malformed one is
    /// refused with what it should be.
    @Test func tokensTakeTheAppsLocaleAndContentStateVersion() async throws {
        try await APIHarness.run { api in
            let jwt = try await APIHarness.token()
            try await api.client.execute(
                uri: "/v1/push-to-start-tokens/ScoreAttributes/phone", method: .put, headers: APIHarness.jsonHeaders(jwt),
                body: Self.body(extra: #","locale":"pt_BR","contentStateVersion":1"#)
            ) { response in
                #expect(response.status == .ok)
                #expect(APIHarness.json(response)["locale"] as? String == "pt-BR")
                #expect(APIHarness.json(response)["contentStateVersion"] as? Int == 1)
            }
            try await api.client.execute(
                uri: "/v1/activities/r-1/tokens/phone", method: .put, headers: APIHarness.jsonHeaders(jwt),
                body: Self.body(extra: #","locale":"de-AT","contentStateVersion":2,"domain":"ride","attributesType":"RideAttributes""#)
            ) { response in
                #expect(response.status == .created)
                #expect(APIHarness.json(response)["locale"] as? String == "de-AT")
            }
            let request = SnapshotRequest(activityID: "r-1", userID: "u-1", attributesType: "ScoreAttributes")
            let stored = try #require(try await api.store.loadSnapshots([request])["r-1"])
            #expect(stored.pushToStartTokens.map(\.locale) == ["pt-BR"])
            #expect(stored.updateTokens.map(\.locale) == ["de-AT"])
            #expect(stored.pushToStartTokens.map(\.contentVersion) == [1])
            #expect(stored.updateTokens.map(\.contentVersion) == [2])

            for (uri, bad) in [
                ("/v1/push-to-start-tokens/ScoreAttributes/phone", #","locale":"german""#),
                ("/v1/push-to-start-tokens/ScoreAttributes/phone", #","locale":"de AT""#),
                ("/v1/activities/r-1/tokens/phone", #","locale":"""#),
            ] {
                try await api.client.execute(uri: uri, method: .put, headers: APIHarness.jsonHeaders(jwt), body: Self.body(extra: bad)) {
                    response in
                    #expect(response.status == .unprocessableContent, "\(bad)")
                    #expect(String(buffer: response.body).contains("'locale' must be a language tag"), "\(bad)")
                }
            }
            for (uri, bad) in [
                ("/v1/push-to-start-tokens/ScoreAttributes/phone", #","contentStateVersion":0"#),
                ("/v1/activities/r-1/tokens/phone", #","contentStateVersion":-3"#),
                ("/v1/activities/r-1/tokens/phone", #","contentStateVersion":1000001"#),
            ] {
                try await api.client.execute(uri: uri, method: .put, headers: APIHarness.jsonHeaders(jwt), body: Self.body(extra: bad)) {
                    response in
                    #expect(response.status == .unprocessableContent, "\(bad)")
                    #expect(String(buffer: response.body).contains("'contentStateVersion' must be a whole number from 1"), "\(bad)")
                }
            }
            for bad in [#","contentStateVersion":"2""#, #","contentStateVersion":2.5"#] {
                try await api.client.execute(
                    uri: "/v1/push-to-start-tokens/ScoreAttributes/phone", method: .put, headers: APIHarness.jsonHeaders(jwt),
                    body: Self.body(extra: bad)
                ) { response in
                    #expect(response.status.code / 100 == 4, "\(bad)")
                    #expect(String(buffer: response.body).contains("contentStateVersion"), "\(bad): \(String(buffer: response.body))")
                }
            }
        }
    }

    /// One push-to-start token per device: each device registers its own (with its iOS
    /// version), deletes only its own, and the route without a device deletes them all.
    @Test func pushToStartTokensPerDevice() async throws {
        try await APIHarness.run { api in
            let jwt = try await APIHarness.token()
            let tokens = ["phone": String(repeating: "01", count: 32), "ipad": String(repeating: "02", count: 32)]
            for (device, token) in tokens.sorted(by: { $0.key < $1.key }) {
                try await api.client.execute(
                    uri: "/v1/push-to-start-tokens/ScoreAttributes/\(device)", method: .put, headers: APIHarness.jsonHeaders(jwt),
                    body: Self.body(token: token, extra: device == "ipad" ? #","osVersion":"17.4""# : "")
                ) { response in
                    #expect(response.status == .ok)
                    #expect(APIHarness.json(response)["deviceId"] as? String == device)
                }
            }
            let request = SnapshotRequest(activityID: "x", userID: "u-1", attributesType: "ScoreAttributes")
            let stored = try #require(try await api.store.loadSnapshots([request])["x"]?.pushToStartTokens)
            #expect(stored.map(\.deviceID) == ["ipad", "phone"])
            #expect(stored.map(\.token) == [tokens["ipad"], tokens["phone"]])
            #expect(stored.map(\.osVersion) == ["17.4", nil])

            for bad in [#","osVersion":"eighteen""#, #","osVersion":"18.""#, #","osVersion":"1234""#] {
                try await api.client.execute(
                    uri: "/v1/push-to-start-tokens/ScoreAttributes/phone", method: .put, headers: APIHarness.jsonHeaders(jwt),
                    body: Self.body(extra: bad)
                ) { response in
                    #expect(response.status == .unprocessableContent, "\(bad)")
                }
            }
            try await api.client.execute(
                uri: "/v1/push-to-start-tokens/ScoreAttributes/ipad", method: .delete, headers: APIHarness.bearer(jwt)
            ) { #expect($0.status == .noContent) }
            try await api.client.execute(
                uri: "/v1/push-to-start-tokens/ScoreAttributes/ipad", method: .delete, headers: APIHarness.bearer(jwt)
            ) { #expect($0.status == .notFound) }
            #expect(try await api.store.loadSnapshots([request])["x"]?.pushToStartTokens.map(\.deviceID) == ["phone"])
            try await api.client.execute(
                uri: "/v1/push-to-start-tokens/ScoreAttributes", method: .delete, headers: APIHarness.bearer(jwt)
            ) { #expect($0.status == .noContent) }
            #expect(try await api.store.loadSnapshots([request])["x"]?.pushToStartTokens == [])
        }
    }

    /// Two users' apps race to claim the same new activity: one owns it, the other gets 403,
    /// and the store holds only the owner's tokens.
    @Test func concurrentRegistrationsSettleOneOwner() async throws {
        try await APIHarness.run { api in
            let jwts = [try await APIHarness.token(user: "u-1"), try await APIHarness.token(user: "u-2")]
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for round in 0..<10 {
                    for (index, jwt) in jwts.enumerated() {
                        group.addTask {
                            try await api.client.execute(
                                uri: "/v1/activities/race-\(round % 3)/tokens/device-\(index)-\(round)", method: .put,
                                headers: APIHarness.jsonHeaders(jwt), body: Self.body()
                            ) { $0.status }
                        }
                    }
                }
                return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
            }
            #expect(statuses.allSatisfy { $0 == .created || $0 == .forbidden })
            for activity in 0..<3 {
                let owner = try #require(try await api.store.activity(id: "race-\(activity)")).userID
                let index = owner == "u-1" ? 0 : 1
                let request = SnapshotRequest(activityID: "race-\(activity)", userID: owner, attributesType: "")
                let tokens = try #require(try await api.store.loadSnapshots([request])["race-\(activity)"]).updateTokens
                #expect(!tokens.isEmpty)
                #expect(tokens.allSatisfy { $0.deviceID.hasPrefix("device-\(index)-") })
            }
        }
    }
}
