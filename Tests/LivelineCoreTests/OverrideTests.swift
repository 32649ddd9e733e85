import Foundation
import LivelineCodecs
import LivelineCore
import Testing

/// A producer's per-event overrides: applied within the domain's bounds, a dead letter
/// naming the field outside them, and a clear parse error for a malformed one.
@Suite("Overrides")
struct OverrideTests {
    /// Translates `name` after the ride's first event, with `overrides` set.
    func decide(_ name: String, _ overrides: EventOverrides, translator: Translator = Fixtures.translator) throws -> TranslationDecision {
        var run = ActivityRun(translator: translator)
        _ = try run.apply("ride-assigned")
        var event = try Fixtures.event(name)
        event.overrides = overrides
        return run.apply(event)
    }

    func aps(_ decision: TranslationDecision) throws -> JSONValue? {
        try JSONValue.parse(try Fixtures.sent(decision).jobs[0].payload)["aps"]
    }

    @Test func overridesWithinTheBoundsShapeThePush() throws {
        let tick = try Fixtures.event("ride-eta-tick")
        let alert = AlertTemplate(title: "Heavy traffic", body: "Your driver is {etaMinutes|a few} minutes away")
        let decision = try decide("ride-eta-tick", EventOverrides(
            priority: .high, staleDate: tick.time.adding(seconds: 600), relevanceScore: 90, alert: alert))
        let send = try Fixtures.sent(decision)
        #expect(send.jobs.allSatisfy { $0.priority == .high }, "a routine tick made urgent")
        let tickAPS = try aps(decision)
        #expect(tickAPS?["alert"]?["title"] == .string("Heavy traffic"))
        #expect(tickAPS?["relevance-score"] == .integer(90) || tickAPS?["relevance-score"] == .double(90))
        #expect(tickAPS?["stale-date"] == .integer(tick.time.unixSeconds + 600))
        #expect(send.jobs.allSatisfy { $0.expiration == tick.time.unixSeconds + 600 })

        let completed = try Fixtures.event("ride-completed")
        let end = try aps(try decide("ride-completed", EventOverrides(dismissalDate: completed.time.adding(seconds: 1_800))))
        #expect(end?["dismissal-date"] == .integer(completed.time.unixSeconds + 1_800))
    }

    @Test func overridesOutsideTheBoundsAreDeadLettersThatSayWhy() throws {
        let tick = try Fixtures.event("ride-eta-tick")
        let completed = try Fixtures.event("ride-completed")
        let cases: [(String, EventOverrides, String)] = [
            ("ride-eta-tick", EventOverrides(relevanceScore: 150), "overrides.relevanceScore 150.0 is outside 0.0...100.0"),
            ("ride-eta-tick", EventOverrides(staleDate: tick.time.adding(seconds: 10)), "overrides.staleDate is 10 s after the event"),
            ("ride-eta-tick", EventOverrides(staleDate: tick.time.adding(seconds: 9 * 3_600)), "outside 60...28800 s"),
            ("ride-eta-tick", EventOverrides(alert: AlertTemplate(title: "", body: "x")), "overrides.alert.title must be 1 to 256"),
            ("ride-eta-tick", EventOverrides(dismissalDate: tick.time), "applies only to an event that ends"),
            ("ride-completed", EventOverrides(dismissalDate: completed.time.adding(seconds: 5 * 3_600)), "within 14400 s"),
        ]
        for (name, overrides, message) in cases {
            guard case .deadLetter(let rejection) = try decide(name, overrides) else {
                Issue.record("\(overrides) was not refused")
                continue
            }
            #expect(rejection.reason == .invalidOverride)
            #expect(rejection.reason.rawValue == "invalid-override")
            #expect(rejection.message.contains(message), "\(rejection.message)")
        }
    }

    @Test func aDomainCanForbidPriorityTenAndAlerts() throws {
        var configuration = Fixtures.configuration
        configuration.domains = configuration.domains.map { domain in
            var domain = domain
            if domain.name == "ride" { domain.policy.overrides = OverrideBounds(allowsHighPriority: false, allowsAlert: false) }
            return domain
        }
        let strict = Translator(configuration: configuration)
        for overrides in [EventOverrides(priority: .high), EventOverrides(alert: AlertTemplate(title: "a", body: "b"))] {
            guard case .deadLetter(let rejection) = try decide("ride-eta-tick", overrides, translator: strict) else {
                Issue.record("\(overrides) was not refused")
                continue
            }
            #expect(rejection.message.contains("not allowed for this domain"))
        }
        #expect(try Fixtures.sent(try decide("ride-eta-tick", EventOverrides(priority: .low), translator: strict)).jobs.count == 2)
    }

    @Test func overridesAreReadFromTheEventAndMalformedOnesRefused() throws {
        func parse(_ overrides: Any) throws -> Result<DomainEvent, EventError> {
            var object = try JSONSerialization.jsonObject(with: Fixtures.eventBody("ride-eta-tick")) as! [String: Any]
            var data = object["data"] as! [String: Any]
            data["overrides"] = overrides
            object["data"] = data
            let body = try JSONSerialization.data(withJSONObject: object)
            do { return .success(try Fixtures.translator.parse(body)) } catch { return .failure(error) }
        }
        let event = try parse([
            "priority": 10, "relevanceScore": 75.5, "staleDate": "2026-11-21T10:30:00Z",
            "alert": ["title": "T", "body": "B", "sound": "default"],
        ]).get()
        #expect(event.overrides == EventOverrides(
            priority: .high, staleDate: RFC3339.parse("2026-11-21T10:30:00Z"), relevanceScore: 75.5,
            alert: AlertTemplate(title: "T", body: "B", sound: "default")))
        let refused: [(Any, EventError)] = [
            (["priority": 7], .invalidField("data.overrides.priority", reason: "must be 5 or 10")),
            (["staleDate": "tomorrow"], .invalidField("data.overrides.staleDate", reason: "is not an RFC 3339 time")),
            (["relevanceScore": "high"], .mistypedField("data.overrides.relevanceScore", expected: "a number", found: "string")),
            (["alert": ["title": "T"]], .missingField("data.overrides.alert.body")),
            ("loud", .mistypedField("data.overrides", expected: "an object", found: "string")),
        ]
        for (overrides, error) in refused {
            guard case .failure(let got) = try parse(overrides) else { Issue.record("\(overrides) parsed"); continue }
            #expect(got == error)
            #expect(got.deadLetterReason == .invalidEvent)
        }
        guard case .failure(let unknown) = try parse(["volume": 11]) else { Issue.record("unknown key parsed"); return }
        #expect(unknown.message.contains("unknown key \"volume\""))
    }
}
