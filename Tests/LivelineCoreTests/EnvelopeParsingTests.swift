import Foundation
import LivelineCore
import Testing

/// Every kind of bad input gets a precise ``EventError`` and the right dead-letter
/// reason; none of them crash.
@Suite("Envelope parsing")
struct EnvelopeParsingTests {
    let translator = Fixtures.translator

    /// A valid ride event as a mutable dictionary, to break one thing at a time.
    func rideEvent() throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Fixtures.eventBody("ride-assigned"))
        return try #require(object as? [String: Any])
    }

    func bytes(_ object: Any) throws -> Data {
        try JSONSerialization.data(withJSONObject: object)
    }

    func parseError(_ body: Data) -> EventError? {
        do {
            _ = try translator.parse(body)
            return nil
        } catch {
            return error
        }
    }

    func mutated(_ change: (inout [String: Any]) -> Void) throws -> Data {
        var event = try rideEvent()
        change(&event)
        return try bytes(event)
    }

    func mutatedData(_ change: (inout [String: Any]) -> Void) throws -> Data {
        try mutated { event in
            var data = event["data"] as? [String: Any] ?? [:]
            change(&data)
            event["data"] = data
        }
    }

    @Test func validEventParses() throws {
        let event = try translator.parse(Fixtures.eventBody("ride-assigned"))
        #expect(event.domain == "ride")
        #expect(event.name == "status")
        #expect(event.activityId == "r-123")
        #expect(event.userId == "u-9")
        #expect(event.status == "driverAssigned")
        #expect(event.time.millisecondsSince1970 == 1_795_255_200_120)
        #expect(event.envelope.routingKey == "ride.status")
        #expect(event.attributes?["riderName"] == .string("Jordan"))
    }

    @Test func notJSON() {
        let error = parseError(Data("{\"specversion\": ".utf8))
        guard case .notJSON(let detail) = error else { Issue.record("got \(String(describing: error))"); return }
        // Where it went wrong, for the producer reading the dead letter.
        #expect(detail == "invalid JSON at byte 16: unexpected end")
        #expect(error?.deadLetterReason == .invalidEvent)
        #expect(parseError(Data([0xFF, 0xFE, 0x00])).map { if case .notJSON = $0 { true } else { false } } == true)
        #expect(parseError(Data()).map { if case .notJSON = $0 { true } else { false } } == true)
    }

    /// Extension attributes are allowed and ignored, but must still be JSON; a repeated
    /// attribute counts once, the last.
    @Test func extensionsAndRepeatedAttributes() throws {
        let valid = try mutated { $0["traceparent"] = "00-abc"; $0["partitionkey"] = ["nested": [1, 2]] }
        #expect(try translator.parse(valid).id == translator.parse(try bytes(rideEvent())).id)

        let body = String(decoding: try bytes(rideEvent()), as: UTF8.self)
        let repeated = "{\"id\":\"first\"," + body.dropFirst()
        #expect(try translator.parse(Data(repeated.utf8)).id != "first")
        let idLast = String(body.dropLast()) + ",\"id\":\"last\"}"
        #expect(try translator.parse(Data(idLast.utf8)).id == "last")

        let broken = "{\"ext\":[1,}," + body.dropFirst()
        guard case .notJSON(let detail) = parseError(Data(broken.utf8)) else {
            Issue.record("bad JSON in an extension was accepted")
            return
        }
        #expect(detail == "invalid JSON at byte 10: unexpected character")
    }

    @Test func notAnObject() {
        #expect(parseError(Data("[1,2]".utf8)) == .notCloudEvent("top level is array, not an object"))
        #expect(parseError(Data("\"hi\"".utf8)) == .notCloudEvent("top level is string, not an object"))
    }

    @Test func notCloudEvents() throws {
        #expect(try parseError(mutated { $0["specversion"] = nil }) == .notCloudEvent("no specversion"))
        #expect(try parseError(mutated { $0["specversion"] = 1.0 }) == .mistypedField("specversion", expected: "a string", found: "number"))
        #expect(try parseError(mutated { $0["specversion"] = "0.3" }) == .unsupportedSpecVersion("0.3"))
    }

    @Test(arguments: ["id", "source", "type", "time", "data"])
    func missingEnvelopeField(field: String) throws {
        #expect(try parseError(mutated { $0[field] = nil }) == .missingField(field))
    }

    @Test func mistypedEnvelopeFields() throws {
        #expect(try parseError(mutated { $0["id"] = 42 }) == .mistypedField("id", expected: "a string", found: "number"))
        #expect(try parseError(mutated { $0["subject"] = ["x"] }) == .mistypedField("subject", expected: "a string", found: "array"))
        #expect(try parseError(mutated { $0["data"] = "text" }) == .mistypedField("data", expected: "an object", found: "string"))
        #expect(try parseError(mutated { $0["id"] = "" }) == .invalidField("id", reason: "must not be empty"))
    }

    @Test func badTimeAndContentType() throws {
        #expect(try parseError(mutated { $0["time"] = "yesterday" }) == .invalidField("time", reason: "\"yesterday\" is not an RFC 3339 timestamp"))
        #expect(try parseError(mutated { $0["time"] = "2026-02-30T10:00:00Z" }) != nil)
        #expect(try parseError(mutated { $0["datacontenttype"] = "text/plain" }) == .invalidField("datacontenttype", reason: "\"text/plain\" is not JSON"))
        #expect(try parseError(mutated { $0["datacontenttype"] = "application/vnd.ride+json; charset=utf-8" }) == nil)
        #expect(try parseError(mutated { $0["data"] = nil; $0["data_base64"] = "e30=" })
            == .invalidField("data_base64", reason: "binary data is not supported; send JSON in data"))
    }

    @Test func typeMustNameAConfiguredDomain() throws {
        #expect(try parseError(mutated { $0["type"] = "parcel.status" }) == .unknownDomain("parcel"))
        #expect(try parseError(mutated { $0["type"] = "ride" }) == .invalidField("type", reason: "\"ride\" is not <domain>.<name>"))
        #expect(try parseError(mutated { $0["type"] = ".status" }) == .invalidField("type", reason: "\".status\" is not <domain>.<name>"))
        #expect(EventError.unknownDomain("parcel").deadLetterReason == .invalidEvent)
    }

    /// A start's topics: an array of 1 to 32 `<kind>:<id>` strings, each error naming what is wrong.
    @Test func topicsAreCheckedAndKeptInOrderWithoutRepeats() throws {
        let event = try translator.parse(try mutatedData { $0["topics"] = ["team:ars", "league:epl", "team:ars"] })
        #expect(event.topics == ["team:ars", "league:epl"])
        #expect(try translator.parse(try mutatedData { $0["topics"] = nil }).topics == nil)
        #expect(try parseError(mutatedData { $0["topics"] = [String]() })
            == .invalidField("data.topics", reason: "must name 1 to 32 topics, not 0"))
        #expect(try parseError(mutatedData { $0["topics"] = "team:ars" })
            == .mistypedField("data.topics", expected: "an array of strings", found: "string"))
        #expect(try parseError(mutatedData { $0["topics"] = [7] })
            == .mistypedField("data.topics", expected: "an array of strings", found: "an array holding number"))
        for bad in ["arsenal", ":ars", "team:", "team:a b"] {
            #expect(try parseError(mutatedData { $0["topics"] = [bad] })
                == .invalidField("data.topics", reason: "\"\(bad)\" is not <kind>:<id>, e.g. team:arsenal"))
        }
        #expect(try parseError(mutatedData { $0["topics"] = (0..<33).map { "team:t\($0)" } })
            == .invalidField("data.topics", reason: "must name 1 to 32 topics, not 33"))
    }

    /// A game is shared: its events need no user.
    @Test func aSharedDomainsEventNeedsNoUser() throws {
        var score = try rideEvent()
        score["type"] = "score.state"
        var data = score["data"] as? [String: Any] ?? [:]
        data["userId"] = nil
        data["contentState"] = ["homeScore": 0, "awayScore": 0, "period": "1st", "clock": "0'", "status": "live"]
        data["attributes"] = nil
        score["data"] = data
        #expect(try translator.parse(try bytes(score)).userId == "")
    }

    @Test func missingActivityOrUser() throws {
        #expect(try parseError(mutatedData { $0["activityId"] = nil }) == .missingField("data.activityId"))
        #expect(try parseError(mutatedData { $0["userId"] = nil }) == .missingField("data.userId"))
        #expect(try parseError(mutatedData { $0["userId"] = 9 }) == .mistypedField("data.userId", expected: "a string", found: "number"))
        #expect(try parseError(mutatedData { $0["activityId"] = "" }) == .invalidField("data.activityId", reason: "must not be empty"))
        #expect(try parseError(mutatedData { $0["contentState"] = nil }) == .missingField("data.contentState"))
        #expect(try parseError(mutatedData { $0["contentState"] = [1] }) == .mistypedField("data.contentState", expected: "an object", found: "array"))
        #expect(try parseError(mutatedData { $0["message"] = false }) == .mistypedField("data.message", expected: "a string", found: "boolean"))
    }

    @Test func unknownStatus() throws {
        let error = try parseError(mutatedData { data in
            var state = data["contentState"] as? [String: Any] ?? [:]
            state["status"] = "teleporting"
            data["contentState"] = state
        })
        #expect(error == .unknownStatus(domain: "ride", status: "teleporting"))
        #expect(error?.deadLetterReason == .invalidEvent)
    }

    @Test func contentStateThatDoesNotFitTheModelIsSchemaMismatch() throws {
        let error = try parseError(mutatedData { data in
            var state = data["contentState"] as? [String: Any] ?? [:]
            state["etaStartSeconds"] = "soon"
            data["contentState"] = state
        })
        guard case .contentStateMismatch(let domain, let detail) = error else {
            Issue.record("got \(String(describing: error))")
            return
        }
        #expect(domain == "ride")
        #expect(detail.contains("etaStartSeconds"))
        #expect(error?.deadLetterReason == .schemaMismatch)

        let missing = try parseError(mutatedData { data in
            var state = data["contentState"] as? [String: Any] ?? [:]
            state["driverName"] = nil
            data["contentState"] = state
        })
        #expect(missing == .contentStateMismatch(domain: "ride", detail: "missing key driverName"))
    }

    @Test func attributesThatDoNotFitTheModelAreSchemaMismatch() throws {
        let error = try parseError(mutatedData { $0["attributes"] = ["riderName": "Jordan"] })
        guard case .attributesMismatch = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(error?.deadLetterReason == .schemaMismatch)
    }

    @Test func oversizeInputIsRejectedBeforeParsing() throws {
        var configuration = Fixtures.configuration
        configuration.maxEventBytes = 1_024
        let small = Translator(configuration: configuration)
        let body = Data(repeating: 0x20, count: 1_025)
        #expect(throws: EventError.tooLarge(bytes: 1_025, limit: 1_024)) { try small.parse(body) }
        #expect(EventError.tooLarge(bytes: 1, limit: 0).deadLetterReason == .invalidEvent)
        // The default is 64 KiB.
        #expect(Translator(configuration: .standard(bundleId: "x")).configuration.maxEventBytes == 65_536)
    }

    @Test func deadLetterRecordKeepsTheOriginalBody() throws {
        let body = Data("nope".utf8)
        let error = try #require(parseError(body))
        let letter = DeadLetter(rejecting: body, error: error, at: EventTime(millisecondsSince1970: 0))
        #expect(letter.reason == .invalidEvent)
        #expect(letter.originalBody == body)
        #expect(letter.message.hasPrefix("event is not JSON"))
        let decoded = try JSONDecoder().decode(DeadLetter.self, from: JSONEncoder().encode(letter))
        #expect(decoded == letter)
    }

    @Test func fuzzedBytesNeverCrash() {
        // Truncations of a valid event at every length: each is either valid or a
        // clean error.
        guard let body = try? Fixtures.eventBody("score-goal") else { return }
        for length in stride(from: 0, to: body.count, by: 7) {
            _ = parseError(body.prefix(length))
        }
    }
}
