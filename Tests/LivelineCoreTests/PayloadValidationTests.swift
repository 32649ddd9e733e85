import Foundation
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

    @Test func typedContractRejectsAStateThatDoesNotRoundTrip() throws {
        let contract = DomainKind.ride.contract
        let payload = Data(#"{"aps":{"content-state":{"driverName":"M"},"event":"update","timestamp":1}}"#.utf8)
        #expect(!contract.contentStateRoundTrips(in: payload))
        #expect(!OpaqueContract().contentStateRoundTrips(in: Data(#"{"aps":{"content-state":[1]}}"#.utf8)))
    }

    @Test func unencodableStateIsSchemaMismatchNotACrash() throws {
        // A state that decoded but cannot be encoded by the model (here: the snapshot
        // was hand-edited to an object that is not a ride state) is dead-lettered.
        var event = try Fixtures.event("ride-assigned")
        event.contentState = .object(["driverName": .string("M")])
        var run = ActivityRun()
        let decision = run.apply(event)
        guard case .deadLetter(let rejection) = decision else { Issue.record("got \(decision)"); return }
        #expect(rejection.reason == .schemaMismatch)
    }
}
