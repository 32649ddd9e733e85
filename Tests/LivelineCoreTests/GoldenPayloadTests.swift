import Foundation
import LivelineCore
import Testing

/// Byte-for-byte payloads for every domain, status and dismissal policy. The files
/// under Golden/payloads were checked by hand against the ActivityKit reference;
/// a difference fails the test (the actual bytes are written to a temporary folder
/// for diffing, the golden files are never rewritten).
@Suite("Golden payloads")
struct GoldenPayloadTests {
    /// A step: an event, the golden payload it must produce (nil: must not send).
    struct Step: Sendable {
        var event: String
        var golden: String?
    }

    /// A chain of events for one activity with its tokens.
    struct Scenario: Sendable, CustomTestStringConvertible {
        var name: String
        var steps: [Step]
        var updateTokens: [String] = [Fixtures.tokenA, Fixtures.tokenB]
        var pushToStartToken: String?
        var testDescription: String { name }
    }

    static let scenarios: [Scenario] = [
        Scenario(name: "ride journey", steps: [
            Step(event: "ride-assigned", golden: "ride-1-assigned-update"),
            Step(event: "ride-eta-tick", golden: "ride-2-eta-tick"),
            Step(event: "ride-arrived", golden: "ride-3-arrived"),
            Step(event: "ride-completed", golden: "ride-4-completed-end-after-1h"),
        ]),
        Scenario(name: "ride cancelled", steps: [
            Step(event: "ride-assigned", golden: nil),
            Step(event: "ride-cancelled", golden: "ride-cancelled-end-immediate"),
        ]),
        Scenario(name: "ride failed", steps: [
            Step(event: "ride-assigned", golden: nil),
            Step(event: "ride-failed", golden: "ride-failed-end-immediate-alert"),
        ]),
        Scenario(name: "ride push-to-start", steps: [
            Step(event: "ride-assigned", golden: "ride-start-push-to-start"),
        ], updateTokens: [], pushToStartToken: Fixtures.startToken),
        Scenario(name: "delivery journey", steps: [
            Step(event: "delivery-confirmed", golden: "delivery-1-confirmed-update"),
            Step(event: "delivery-picked-up", golden: "delivery-2-picked-up"),
            Step(event: "delivery-delivered", golden: "delivery-3-delivered-end-default"),
        ]),
        Scenario(name: "delivery cancelled", steps: [
            Step(event: "delivery-confirmed", golden: nil),
            Step(event: "delivery-cancelled", golden: "delivery-cancelled-end-immediate"),
        ]),
        Scenario(name: "delivery push-to-start", steps: [
            Step(event: "delivery-confirmed", golden: "delivery-start-push-to-start"),
        ], updateTokens: [], pushToStartToken: Fixtures.startToken),
        Scenario(name: "score game", steps: [
            Step(event: "score-scheduled", golden: "score-1-scheduled-update"),
            Step(event: "score-kickoff", golden: "score-2-kickoff"),
            Step(event: "score-clock", golden: "score-3-clock-tick"),
            Step(event: "score-goal", golden: "score-4-goal"),
            Step(event: "score-final", golden: "score-5-final-end-after-30m"),
        ]),
        Scenario(name: "score postponed", steps: [
            Step(event: "score-scheduled", golden: nil),
            Step(event: "score-postponed", golden: "score-postponed-end-immediate"),
        ]),
        Scenario(name: "generic flight", steps: [
            Step(event: "flight-boarding", golden: "flight-1-boarding"),
            Step(event: "flight-departed", golden: "flight-2-departed"),
            Step(event: "flight-landed", golden: "flight-3-landed-end-after-10m"),
        ]),
        Scenario(name: "generic flight push-to-start", steps: [
            Step(event: "flight-boarding", golden: "flight-start-push-to-start"),
        ], updateTokens: [], pushToStartToken: Fixtures.startToken),
    ]

    @Test("payload bytes match the golden file", arguments: scenarios)
    func payloadsMatch(scenario: Scenario) throws {
        var run = ActivityRun()
        run.tokens = TokenSnapshot(updateTokens: scenario.updateTokens, pushToStartTokens: scenario.pushToStartToken.map { [$0] } ?? [])
        for step in scenario.steps {
            let send = try Fixtures.sent(try run.apply(step.event))
            guard let golden = step.golden else { continue }
            let expected = try? Fixtures.goldenPayload(golden)
            #expect(expected != nil, "missing golden file payloads/\(golden).json")
            #expect(!send.jobs.isEmpty)
            for job in send.jobs {
                if job.payload != expected { try Self.writeActual(job.payload, name: golden) }
                #expect(
                    job.payload == expected,
                    "\(golden): got \(String(decoding: job.payload, as: UTF8.self))"
                )
            }
        }
    }

    /// Writes what was produced next to nothing checked in, for `diff`.
    static func writeActual(_ payload: Data, name: String) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("liveline-golden-actual")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try payload.write(to: folder.appendingPathComponent("\(name).json"))
    }
}
