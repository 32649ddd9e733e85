import Foundation
import LivelineCore
import Testing

/// A new domain is configuration only: decoded from JSON, content-state passed
/// through as a JSON object.
@Suite("Generic domain")
struct GenericDomainTests {
    static let parcelConfiguration = #"""
    {
      "name": "parcel", "kind": "generic", "attributesType": "ParcelAttributes",
      "bundleId": "com.example.parcels",
      "policy": {
        "staleAfterSeconds": 600,
        "statuses": {
          "inTransit": {},
          "outForDelivery": {"priority": 10, "alert": {"title": "Out for delivery", "body": "{carrier|Your carrier} has it."}},
          "delivered": {"isTerminal": true, "dismissal": {"afterSeconds": 900}},
          "lost": {"isTerminal": true, "dismissal": "immediate", "alert": {"title": "Parcel lost", "body": "{message}"}}
        },
        "pushToStartAlert": {"title": "Parcel {parcelId}", "body": "Tracking started."}
      }
    }
    """#

    func parcelTranslator() throws -> Translator {
        let parcel = try JSONDecoder().decode(DomainConfiguration.self, from: Data(Self.parcelConfiguration.utf8))
        var configuration = Fixtures.configuration
        configuration.domains.append(parcel)
        return Translator(configuration: configuration)
    }

    func event(status: String, state: String, id: String, time: String, extra: String = "") -> Data {
        Data(#"""
        {"specversion":"1.0","id":"\#(id)","source":"//parcels","type":"parcel.status","time":"\#(time)",
         "data":{"activityId":"p-1","userId":"u-1","status":"\#(status)","contentState":\#(state)\#(extra)}}
        """#.utf8)
    }

    @Test func configuredDomainTranslatesWithoutCode() throws {
        let translator = try parcelTranslator()
        var run = ActivityRun(translator: translator)
        let first = try translator.parse(event(status: "inTransit", state: #"{"eta":"Tue","hops":[1,2]}"#, id: "p1", time: "2026-11-21T10:00:00Z",
                                               extra: #","attributes":{"parcelId":"PX-9"}"#))
        let send = try Fixtures.sent(run.apply(first))
        #expect(send.jobs[0].attributesType == "ParcelAttributes")
        #expect(send.jobs[0].bundleId == "com.example.parcels")
        #expect(send.jobs[0].apnsTopic == "com.example.parcels.push-type.liveactivity")
        #expect(String(decoding: send.jobs[0].payload, as: UTF8.self)
            == #"{"aps":{"content-state":{"eta":"Tue","hops":[1,2]},"event":"update","stale-date":1795255800,"timestamp":1795255200}}"#)

        let out = try translator.parse(event(status: "outForDelivery", state: #"{"eta":"now"}"#, id: "p2", time: "2026-11-21T11:00:00Z"))
        let alerting = try Fixtures.sent(run.apply(out))
        #expect(alerting.jobs[0].priority == .high)
        #expect(String(decoding: alerting.jobs[0].payload, as: UTF8.self).contains(#""alert":{"body":"Your carrier has it.","title":"Out for delivery"}"#))

        let lost = try translator.parse(event(status: "lost", state: #"{"eta":null}"#, id: "p3", time: "2026-11-21T12:00:00Z",
                                              extra: #","message":"Scanned at the wrong depot.""#))
        let end = try Fixtures.sent(run.apply(lost))
        #expect(String(decoding: end.jobs[0].payload, as: UTF8.self)
            == #"{"aps":{"alert":{"body":"Scanned at the wrong depot.","title":"Parcel lost"},"content-state":{"eta":null},"dismissal-date":1795262399,"event":"end","timestamp":1795262400}}"#)
    }

    @Test func genericStatusIsRequiredAndMustBeConfigured() throws {
        let translator = try parcelTranslator()
        let noStatus = Data(#"{"specversion":"1.0","id":"x","source":"s","type":"parcel.status","time":"2026-11-21T10:00:00Z","data":{"activityId":"p","userId":"u","contentState":{}}}"#.utf8)
        #expect(throws: EventError.missingField("data.status")) { try translator.parse(noStatus) }
        #expect(throws: EventError.unknownStatus(domain: "parcel", status: "teleported")) {
            try translator.parse(event(status: "teleported", state: "{}", id: "x", time: "2026-11-21T10:00:00Z"))
        }
    }

    @Test func genericContentStateMustBeAnObject() throws {
        let translator = try parcelTranslator()
        #expect(throws: EventError.mistypedField("data.contentState", expected: "an object", found: "string")) {
            try translator.parse(event(status: "inTransit", state: #""text""#, id: "x", time: "2026-11-21T10:00:00Z"))
        }
        #expect(throws: EventError.attributesMismatch(domain: "parcel", detail: "must be a JSON object, found array")) {
            try translator.parse(event(status: "inTransit", state: "{}", id: "x", time: "2026-11-21T10:00:00Z", extra: #","attributes":[1]"#))
        }
    }

    @Test func configurationRoundTripsThroughJSON() throws {
        let configuration = Fixtures.configuration
        let data = try JSONEncoder().encode(configuration)
        #expect(try JSONDecoder().decode(TranslatorConfiguration.self, from: data) == configuration)
    }

    @Test func minimalConfigurationUsesDefaults() throws {
        let text = #"{"domains":[{"name":"gym","kind":"generic","attributesType":"WorkoutAttributes","bundleId":"com.example.gym"}]}"#
        let configuration = try JSONDecoder().decode(TranslatorConfiguration.self, from: Data(text.utf8))
        #expect(configuration.maxEventBytes == 65_536)
        #expect(configuration.domains[0].delivery == .deviceTokens)
        #expect(configuration.domains[0].policy == DomainPolicy())
        #expect(configuration.domains[0].policy.budget == .standard)
        #expect(configuration.domains[0].policy.pushToStartAlert == nil)
    }

    @Test func statusPolicyDefaults() throws {
        let terminal = try JSONDecoder().decode(StatusPolicy.self, from: Data(#"{"isTerminal":true}"#.utf8))
        #expect(terminal.priority == .high)
        #expect(terminal.dismissal == .default)
        let plain = try JSONDecoder().decode(StatusPolicy.self, from: Data("{}".utf8))
        #expect(plain == .routine)
        #expect(plain.priority == .low)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(DismissalPolicy.self, from: Data(#""soon""#.utf8))
        }
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(PushPriority.self, from: Data("7".utf8))
        }
    }
}
