import Foundation
import LivelineCore
import Testing

/// Apps kept apart: the default app's ids are their own keys, another app's are `app/id`, and
/// an event names its app with `bundleid`, else its domain's.
@Suite("App keys")
struct AppKeysTests {
    static let eats = "com.example.eats"
    static let keys = AppKeys(defaultApp: Fixtures.bundleId)
    /// The standard domains for the default app and for eats.
    static let translator = Translator(configuration: .standard(bundleId: Fixtures.bundleId, otherApps: [eats]))

    @Test func keysNameTheirAppWhateverTheIdHolds() {
        #expect(Self.keys.key(app: Fixtures.bundleId, id: "r-1") == "r-1")
        #expect(Self.keys.key(app: Self.eats, id: "r-1") == "com.example.eats/r-1")
        #expect(Self.keys.key(app: Self.eats, id: "rides/r-1") == "com.example.eats/rides/r-1")
        #expect(Self.keys.app(of: "r-1") == Fixtures.bundleId)
        #expect(Self.keys.app(of: "rides/r-1") == Fixtures.bundleId, "rides is no bundle id")
        #expect(Self.keys.app(of: "com.example.eats/rides/r-1") == Self.eats)
        #expect(AppKeys.id(of: "com.example.eats/rides/r-1") == "rides/r-1")
        #expect(AppKeys.id(of: "rides/r-1") == "rides/r-1")
        for valid in ["com.example.eats", "a.b", "com.ex-ample.App2"] { #expect(AppKeys.isBundleID(valid), "\(valid)") }
        for invalid in ["eats", "com..eats", ".com.eats", "com.eats.", "com.eats/x", "com.e_ats", ""] {
            #expect(!AppKeys.isBundleID(invalid), "\(invalid)")
        }
    }

    /// The golden ride event, for `bundleID`'s app when given.
    func ride(bundleID: String?, activity: String = "r-1", user: String = "u-9") throws -> Data {
        var event = try #require(try JSONSerialization.jsonObject(with: Fixtures.eventBody("ride-assigned")) as? [String: Any])
        var data = try #require(event["data"] as? [String: Any])
        data["activityId"] = activity
        data["userId"] = user
        event["data"] = data
        event["bundleid"] = bundleID
        return try JSONSerialization.data(withJSONObject: event)
    }

    @Test func anEventForAnotherAppIsKeyedWithinItAndPushedToItsTopic() throws {
        let own = try Self.translator.parse(try ride(bundleID: nil))
        #expect(own.app == Fixtures.bundleId && own.activityId == "r-1" && own.userId == "u-9")
        let eats = try Self.translator.parse(try ride(bundleID: Self.eats))
        #expect(eats.app == Self.eats)
        #expect(eats.activityId == "com.example.eats/r-1" && eats.userId == "com.example.eats/u-9")

        var run = ActivityRun(translator: Self.translator)
        guard case .send(let send) = run.apply(eats) else { Issue.record("not sent"); return }
        #expect(send.jobs.allSatisfy { $0.bundleId == Self.eats && $0.apnsTopic == "com.example.eats.push-type.liveactivity" })
        #expect(send.jobs.allSatisfy { $0.activityId == "com.example.eats/r-1" })
        #expect(send.newSnapshot.id == "com.example.eats/r-1")
    }

    @Test func anAppTheDomainDoesNotServeIsAnUnknownAppDeadLetter() {
        #expect(throws: EventError.unknownApp("com.example.nope", domain: "ride")) {
            try Self.translator.parse(try ride(bundleID: "com.example.nope"))
        }
        #expect(EventError.unknownApp("com.example.nope", domain: "ride").deadLetterReason == .unknownApp)
        #expect(throws: EventError.invalidField("bundleid", reason: "\"not a bundle\" is not a bundle id such as com.example.rides")) {
            try Self.translator.parse(try ride(bundleID: "not a bundle"))
        }
    }

    /// The default app's ids are their own keys, so one that reads as another app's key is refused.
    @Test func aDefaultAppIdShapedLikeAnotherAppsKeyIsRefused() throws {
        #expect(throws: EventError.self) { try Self.translator.parse(try ride(bundleID: nil, activity: "com.example.eats/r-1")) }
        #expect(throws: EventError.self) { try Self.translator.parse(try ride(bundleID: nil, user: "com.example.eats/u-9")) }
        #expect(try Self.translator.parse(try ride(bundleID: nil, activity: "rides/r-1")).activityId == "rides/r-1")
        #expect(try Self.translator.parse(try ride(bundleID: Self.eats, activity: "com.x/1")).activityId == "com.example.eats/com.x/1")
    }

    @Test func anOutcomeNamesTheActivityAsItsProducerDoes() throws {
        let outcome = EventOutcome(.delivered, eventId: "e", domain: "ride", activityId: "com.example.eats/r-1", app: Self.eats)
        #expect(outcome.activityId == "r-1" && outcome.bundleId == Self.eats)
        let own = EventOutcome(.delivered, eventId: "e", domain: "ride", activityId: "r-1", app: Fixtures.bundleId)
        #expect(own.activityId == "r-1" && own.bundleId == Fixtures.bundleId)
    }

    @Test func aDomainsFileNamesItsAppsAndDefault() throws {
        let json = #"""
            {"defaultApp": "com.example.eats", "domains": [{"name": "ride", "kind": "ride", "attributesType": "RideAttributes",
              "bundleId": "com.example.rides", "apps": ["com.example.eats"]}]}
            """#
        let configuration = try JSONDecoder().decode(TranslatorConfiguration.self, from: Data(json.utf8))
        #expect(configuration.defaultApp == Self.eats)
        #expect(configuration.domains[0].apps == ["com.example.rides", Self.eats])
        let wrong = json.replacingOccurrences(of: #""defaultApp": "com.example.eats""#, with: #""defaultApp": "com.example.nope""#)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(TranslatorConfiguration.self, from: Data(wrong.utf8)) }
        let badApp = json.replacingOccurrences(of: #"["com.example.eats"]"#, with: #"["eats"]"#)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(TranslatorConfiguration.self, from: Data(badApp.utf8)) }
    }
}
