import Foundation
import LivelineCodecs
@testable import LivelineCore
import Testing

/// The 4 KB limit and the content-state round trip.
@Suite("Payload validation")
struct PayloadValidationTests {
    func flightEvent(gate: String) -> Data {
        Data(#"""
        {"specversion":"1.0","id":"big-\#(gate.count)","source":"//flights","type":"flight.status","time":"2026-11-21T10:00:00Z",
         "data":{"activityId":"f-1","userId":"u-1","status":"departed","contentState":{"gate":"\#(gate)"}}}
        """#.utf8)
    }

    func translate(_ body: Data) throws -> TranslationDecision {
        var run = ActivityRun()
        return run.apply(try Fixtures.translator.parse(body))
    }

    @Test func exactly4096BytesIsSent() throws {
        // The payload around the gate text is 118 bytes:
        // {"aps":{"content-state":{"gate":"…"},"event":"update","relevance-score":40,"stale-date":1795257000,"timestamp":1795255200}}
        let overhead = try Fixtures.sent(try translate(flightEvent(gate: ""))).jobs[0].payload.count
        let fits = try Fixtures.sent(try translate(flightEvent(gate: String(repeating: "x", count: 4_096 - overhead))))
        #expect(fits.jobs[0].payload.count == 4_096)
    }

    @Test func oneByteMoreIsPayloadTooLarge() throws {
        let overhead = try Fixtures.sent(try translate(flightEvent(gate: ""))).jobs[0].payload.count
        let decision = try translate(flightEvent(gate: String(repeating: "x", count: 4_097 - overhead)))
        guard case .deadLetter(let rejection) = decision else { Issue.record("got \(decision)"); return }
        #expect(rejection.reason == .payloadTooLarge)
        #expect(rejection.reason.rawValue == "payload-too-large")
        #expect(rejection.message.contains("4097 bytes"))
    }

    @Test func multiByteTextCountsInBytes() throws {
        let overhead = try Fixtures.sent(try translate(flightEvent(gate: ""))).jobs[0].payload.count
        // "é" is two bytes in UTF-8: half as many characters reach the same limit.
        let count = (4_097 - overhead + 1) / 2
        let decision = try translate(flightEvent(gate: String(repeating: "é", count: count)))
        guard case .deadLetter(let rejection) = decision else { Issue.record("got \(decision)"); return }
        #expect(rejection.reason == .payloadTooLarge)
    }

    @Test func typedContractRejectsAStateThatDoesNotDecode() throws {
        let contract = DomainKind.ride.contract
        #expect(throws: EventError.self) {
            try contract.canonicalContentState(.object(["driverName": .string("M")]), domain: "ride")
        }
        #expect(throws: EventError.self) { try OpaqueContract().canonicalContentState(.array([.integer(1)]), domain: "flight") }
    }

    @Test func canonicalFormIsTheModelsOwnEncoding() throws {
        let sent = try Fixtures.event("ride-assigned").contentState
        guard case .object(var members) = sent else { Issue.record("not an object"); return }
        // An unknown key is dropped and a whole double comes back as the model writes it.
        members["unknown"] = .string("dropped")
        members["distanceRemaining"] = .double(3)
        let canonical = try DomainKind.ride.contract.canonicalContentState(.object(members), domain: "ride")
        #expect(canonical.value["unknown"] == nil)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let modelBytes = try encoder.encode(
            try JSONDecoder().decode(RideModel.State.self, from: JSONValue.encoded(.object(members))))
        #expect(JSONValue.encoded(canonical.value) == modelBytes)
        #expect(canonical.bytes == modelBytes)
        // Canonical input comes back as it is.
        let same = try DomainKind.ride.contract.canonicalContentState(sent, domain: "ride")
        #expect(same.value == sent)
        #expect(same.bytes == JSONValue.encoded(sent))
    }

    @Test func anEventsContentStateBytesFollowItsValue() throws {
        var event = try Fixtures.event("ride-assigned")
        #expect(event.contentStateJSON == JSONValue.encoded(event.contentState))
        event.contentState = .object(["driverName": .string("M")])
        #expect(event.contentStateJSON == Data(#"{"driverName":"M"}"#.utf8))
    }

    /// A model whose encoding its own decoder rejects: the round trip must catch it
    /// before a push the app cannot decode is sent.
    struct LopsidedState: Codable, Sendable {
        var value: Int
        init(value: Int) { self.value = value }
        init(from decoder: any Decoder) throws {
            value = try decoder.container(keyedBy: Keys.self).decode(Int.self, forKey: .input)
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(value, forKey: .output)
        }
        enum Keys: String, CodingKey { case input, output }
    }

    @Test func aModelWhoseEncodingDoesNotDecodeBackIsSchemaMismatch() throws {
        let contract = ModelContract<LopsidedState, LopsidedState>(statusKey: "status", modelStatuses: nil)
        do {
            _ = try contract.canonicalContentState(.object(["input": .integer(1)]), domain: "lopsided")
            Issue.record("accepted a state that does not round trip")
        } catch {
            #expect(error.deadLetterReason == .schemaMismatch)
            #expect(error.message.contains("does not decode back"))
        }
    }
}
