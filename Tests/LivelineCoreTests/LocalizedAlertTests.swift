import Foundation
import LivelineCodecs
import LivelineCore
import Testing

/// Alerts in the fan's language: localization keys that each device localizes, and texts per
/// language chosen from the locale each device's app registered with its token.
@Suite("Localized alerts")
struct LocalizedAlertTests {
    static let arrived = AlertTemplate(
        title: .localized(key: "DRIVER_ARRIVED_TITLE", arguments: []),
        body: .localized(key: "DRIVER_ARRIVED_BODY", arguments: ["{driverName}", "{vehicleDescription}", "{missing|?}"]),
        sound: "default")

    static let arrivedInLanguages = AlertTemplate(
        title: "Your driver has arrived", body: "{driverName} is waiting.", sound: "default",
        translations: [
            "de": .init(title: "Ihr Fahrer ist da", body: "{driverName} wartet."),
            "pt-BR": .init(title: "Seu motorista chegou", body: "{driverName} está esperando."),
            "en": .init(title: "Driver here", body: "{driverName} is outside."),
        ])

    /// The ride domain with `alert` on arrival.
    static func translator(arrival alert: AlertTemplate, fallbackLanguage: String = "en") -> Translator {
        var configuration = Fixtures.configuration
        configuration.domains = configuration.domains.map { domain in
            guard domain.name == "ride" else { return domain }
            var domain = domain
            domain.policy.statuses["driverArrived"]?.alert = alert
            domain.policy.fallbackLanguage = fallbackLanguage
            return domain
        }
        return Translator(configuration: configuration)
    }

    /// The arrival's jobs, after the ride's first event, for devices with `locales`.
    static func arrival(_ translator: Translator, locales: [String: String] = [:], overrides: EventOverrides? = nil) throws -> TranslationDecision {
        var run = ActivityRun(translator: translator)
        run.tokens.locales = locales
        _ = try run.apply("ride-assigned")
        var event = try Fixtures.event("ride-arrived")
        event.overrides = overrides
        return run.apply(event)
    }

    static func alert(_ job: PushJob) throws -> JSONValue? {
        try JSONValue.parse(job.payload)["aps"]?["alert"]
    }

    /// The exact bytes of the `alert` member: loc-args before loc-key, as keys are sorted, and
    /// each argument filled in on the server.
    @Test func aLocalizationKeyIsSentForTheDeviceToLocalize() throws {
        let send = try Fixtures.sent(try Self.arrival(Self.translator(arrival: Self.arrived)))
        #expect(send.alertForm == .localizationKey)
        #expect(send.jobs.count == 2)
        for job in send.jobs {
            let payload = String(decoding: job.payload, as: UTF8.self)
            #expect(payload.hasPrefix(#"{"aps":{"alert":{"body":{"loc-args":["Maria","White Toyota Camry","?"],"loc-key":"DRIVER_ARRIVED_BODY"},"#
                + #""sound":"default","title":{"loc-args":[],"loc-key":"DRIVER_ARRIVED_TITLE"}},"#), "\(payload)")
            #expect(job.alerts)
        }
    }

    /// Each device gets the text of its locale, then of its language, then of the domain's
    /// fallback language; with no text for any of them, the alert's own.
    @Test func eachDeviceGetsTheTextOfItsLocale() throws {
        let tokens = (0..<5).map { String(repeating: String($0), count: 64) }
        var run = ActivityRun(translator: Self.translator(arrival: Self.arrivedInLanguages))
        run.tokens = TokenSnapshot(updateTokens: tokens, locales: [
            tokens[0]: "de-AT", tokens[1]: "pt-BR", tokens[2]: "fr", tokens[3]: "PT_br",
        ])
        _ = try run.apply("ride-assigned")
        let send = try Fixtures.sent(run.apply(try Fixtures.event("ride-arrived")))
        #expect(send.alertForm == .perLanguage)
        var titles: [String: JSONValue] = [:]
        for job in send.jobs {
            guard case .device(let token, _, _) = job.target else { continue }
            titles[token] = try Self.alert(job)?["title"]
        }
        #expect(titles[tokens[0]] == .string("Ihr Fahrer ist da"), "de-AT has no text of its own: German")
        #expect(titles[tokens[1]] == .string("Seu motorista chegou"))
        #expect(titles[tokens[3]] == .string("Seu motorista chegou"), "pt_BR as Locale.identifier writes it")
        #expect(titles[tokens[2]] == .string("Driver here"), "French: the fallback language, English")
        #expect(titles[tokens[4]] == .string("Driver here"), "no locale: the fallback language")
        #expect(send.traceNotes.contains { $0.hasPrefix("alert in ") && $0.contains("de") && $0.contains("pt-br") })

        // Without a text in the fallback language either, the alert's own.
        var own = Self.arrivedInLanguages
        own.translations["en"] = nil
        var second = ActivityRun(translator: Self.translator(arrival: own, fallbackLanguage: "en"))
        second.tokens = TokenSnapshot(updateTokens: [tokens[2]], locales: [tokens[2]: "fr"])
        _ = try second.apply("ride-assigned")
        let french = try Fixtures.sent(second.apply(try Fixtures.event("ride-arrived")))
        #expect(try Self.alert(french.jobs[0])?["title"] == .string("Your driver has arrived"))
        #expect(try Self.alert(french.jobs[0])?["body"] == .string("Maria is waiting."))
    }

    /// A push-to-start reaches each of the user's devices in its own language too.
    @Test func aStartIsInTheLanguageOfEachDevice() throws {
        var start = Self.arrivedInLanguages
        start.title = .text("Ride matched")
        var configuration = Fixtures.configuration
        configuration.domains = configuration.domains.map { domain in
            var domain = domain
            if domain.name == "ride" { domain.policy.pushToStartAlert = start }
            return domain
        }
        var run = ActivityRun(translator: Translator(configuration: configuration))
        let german = String(repeating: "d", count: 64), other = String(repeating: "e", count: 64)
        run.tokens = TokenSnapshot(pushToStartTokens: [german, other], locales: [german: "de"])
        let send = try Fixtures.sent(run.apply("ride-assigned"))
        #expect(send.jobs.allSatisfy { $0.event == .start })
        let byToken = Dictionary(uniqueKeysWithValues: try send.jobs.map { job -> (String, JSONValue?) in
            guard case .device(let token, _, _) = job.target else { return ("", nil) }
            return (token, try Self.alert(job)?["title"])
        })
        #expect(byToken[german] == .string("Ihr Fahrer ist da"))
        #expect(byToken[other] == .string("Driver here"))
    }

    /// A broadcast carries one payload for every subscriber: a channel domain is refused at
    /// start if an alert has texts per language, and a producer's such override is a dead letter.
    @Test func aChannelDomainTakesLocalizationKeysNotTextsPerLanguage() throws {
        let json = #"""
            {"name": "match", "kind": "generic", "attributesType": "MatchAttributes", "bundleId": "com.example",
             "delivery": "channel",
             "policy": {"statuses": {"goal": {"alert": {"title": "Goal!", "body": "{scorer}",
                                                         "translations": {"de": {"title": "Tor!", "body": "{scorer}"}}}}}}}
            """#
        #expect {
            try JSONDecoder().decode(DomainConfiguration.self, from: Data(json.utf8))
        } throws: { error in
            "\(error)".contains("policy.statuses.goal.alert has translations, which a broadcast channel cannot carry: use loc-key")
        }
        let keys = #"""
            {"name": "match", "kind": "generic", "attributesType": "MatchAttributes", "bundleId": "com.example",
             "delivery": "channel",
             "policy": {"statuses": {"goal": {"alert": {"title": {"loc-key": "GOAL"},
                                                         "body": {"loc-key": "GOAL_BY", "loc-args": ["{scorer}"]}}}}}}
            """#
        let domain = try JSONDecoder().decode(DomainConfiguration.self, from: Data(keys.utf8))
        #expect(domain.policy.statuses["goal"]?.alert?.body == .localized(key: "GOAL_BY", arguments: ["{scorer}"]))
        #expect(domain.policy.statuses["goal"]?.alert?.form == .localizationKey)

        var channelRide = Fixtures.configuration
        channelRide.domains = channelRide.domains.map { domain in
            var domain = domain
            if domain.name == "ride" { domain.delivery = .channel }
            return domain
        }
        let decision = try Self.arrival(
            Translator(configuration: channelRide), overrides: EventOverrides(alert: Self.arrivedInLanguages))
        guard case .deadLetter(let rejection) = decision else {
            Issue.record("texts per language on a channel were not refused: \(decision)")
            return
        }
        #expect(rejection.reason == .invalidOverride)
        #expect(rejection.message.contains("overrides.alert.translations cannot go on a broadcast channel"))
    }

    /// Decoding a domain file: each form, and clear errors for one that cannot be sent.
    @Test func theDomainFileTakesEachFormAndRefusesBrokenOnes() throws {
        func decode(_ alert: String) throws -> AlertTemplate {
            try JSONDecoder().decode(AlertTemplate.self, from: Data(alert.utf8))
        }
        #expect(try decode(#"{"title": "A", "body": "B"}"#).form == .text)
        #expect(try decode(#"{"title": "A", "body": {"loc-key": "K"}}"#).body == .localized(key: "K", arguments: []))
        let languages = try decode(#"{"title": "A", "body": "B", "translations": {"DE_at": {"title": "a", "body": "b"}}}"#)
        #expect(languages.translations.keys.sorted() == ["de-at"])
        #expect(languages.form == .perLanguage)
        for (broken, message) in [
            (#"{"title": {"loc-key": "K"}, "body": "B", "translations": {"de": {"title": "a", "body": "b"}}}"#, "translations need a plain title"),
            (#"{"title": "A", "body": "B", "translations": {"german": {"title": "a", "body": "b"}}}"#, "german is not a language tag"),
            (#"{"title": {"loc-args": ["x"]}, "body": "B"}"#, "loc-key"),
        ] {
            #expect(throws: (any Error).self, "\(broken)") { try decode(broken) }
            do { _ = try decode(broken) } catch { #expect("\(error)".contains(message), "\(error)") }
        }
        // Every form survives encoding and decoding.
        for template in [Self.arrived, Self.arrivedInLanguages] {
            #expect(try decode(String(decoding: JSONEncoder().encode(template), as: UTF8.self)) == template)
        }
    }

    /// A producer's alert in each form, and each bound on it.
    @Test func producersOverrideWithTheSameFormsWithinTheSameBounds() throws {
        let body = Data(#"""
            {"specversion": "1.0", "id": "e-1", "source": "//rides", "type": "ride.status", "time": "2026-11-21T10:05:00.120Z",
             "datacontenttype": "application/json",
             "data": {"activityId": "r-123", "userId": "u-9",
                      "contentState": {"driverName": "Maria", "driverPhoto": "car.fill", "vehicleDescription": "Camry",
                                       "etaStartSeconds": 1795255500, "etaEndSeconds": 1795255500, "status": "driverArrived",
                                       "distanceRemaining": 0},
                      "overrides": {"alert": {"title": {"loc-key": "LATE", "loc-args": ["{driverName}"]}, "body": "x",
                                              "translations": {"de": {"title": "Spät", "body": "y"}}}}}}
            """#.utf8)
        let event = try Fixtures.translator.parse(body)
        #expect(event.overrides?.alert?.title == .localized(key: "LATE", arguments: ["{driverName}"]))
        #expect(event.overrides?.alert?.translations["de"]?.title == "Spät")
        #expect(throws: EventError.invalidField("data.overrides.alert.translations.deutsch", reason: "is not a language tag such as de or pt-BR")) {
            _ = try Fixtures.translator.parse(Data(String(decoding: body, as: UTF8.self).replacingOccurrences(of: #""de":"#, with: #""deutsch":"#).utf8))
        }
        #expect(throws: EventError.mistypedField("data.overrides.alert.title.loc-args[0]", expected: "a string", found: "number")) {
            _ = try Fixtures.translator.parse(Data(String(decoding: body, as: UTF8.self).replacingOccurrences(of: #"["{driverName}"]"#, with: "[1]").utf8))
        }

        let long = String(repeating: "x", count: 257)
        let cases: [(AlertTemplate, String)] = [
            (AlertTemplate(title: .localized(key: "", arguments: []), body: .text("b")), "overrides.alert.title.loc-key must be 1 to 256"),
            (AlertTemplate(title: .text("a"), body: .localized(key: "K", arguments: ["", long])), "overrides.alert.body.loc-args[1] must be 0 to 256"),
            (AlertTemplate(title: .text("a"), body: .localized(key: "K", arguments: Array(repeating: "x", count: 17))), "17 loc-args, more than 16"),
            (AlertTemplate(title: "a", body: "b", translations: ["de": .init(title: "a", body: long)]), "overrides.alert.translations.de.body must be 1 to 256"),
        ]
        for (alert, message) in cases {
            guard case .deadLetter(let rejection) = try Self.arrival(Fixtures.translator, overrides: EventOverrides(alert: alert)) else {
                Issue.record("\(alert) was not refused")
                continue
            }
            #expect(rejection.reason == .invalidOverride)
            #expect(rejection.message.contains(message), "\(rejection.message)")
        }
        // An empty loc-arg is fine: a name may be blank.
        let blank = AlertTemplate(title: .text("a"), body: .localized(key: "K", arguments: [""]))
        #expect(try Fixtures.sent(Self.arrival(Fixtures.translator, overrides: EventOverrides(alert: blank))).alertForm == .localizationKey)
    }

    /// A placeholder a Swift model cannot fill (in text, a loc-arg or any language) is refused
    /// when the domain file is read, naming it; one with a fallback, or in a generic domain (which
    /// has no model), is not. A producer's override that names what its event lacks is a dead letter.
    @Test func placeholdersNameWhatTheStateHas() throws {
        for domain in TranslatorConfiguration.standard(bundleId: Fixtures.bundleId).domains {
            #expect(domain.alertProblem == nil, "\(domain.name)")
        }
        func problem(kind: String, _ alert: String) -> String? {
            Fixtures.problem(reading: #"{"name": "d", "kind": "\#(kind)", "attributesType": "T", "bundleId": "b", "policy": {"statuses": {"x": {"alert": \#(alert)}}}}"#)
        }
        #expect(problem(kind: "ride", #"{"title": {"loc-key": "K", "loc-args": ["{driverName}", "{speed}"]}, "body": "b"}"#)
            == "domain d: policy.statuses.x.alert names {speed}, which neither the ride content-state nor its attributes have "
                + "(nor is it message): name a field, or give a fallback as {speed|…}")
        #expect(problem(kind: "score", #"{"title": "{homeTeam.nickname}", "body": "b"}"#)?.contains("names {homeTeam.nickname}") == true)
        #expect(problem(kind: "ride", #"{"title": "a", "body": "b", "translations": {"de": {"title": "{fahrer}", "body": "b"}}}"#)?
            .contains("names {fahrer}") == true)
        #expect(problem(kind: "ride", #"{"title": {"loc-key": "K", "loc-args": ["{speed|?}", "{riderName}", "{message}"]}, "body": "b"}"#) == nil)
        #expect(problem(kind: "score", #"{"title": "{homeTeam.abbreviation} {lastPlay}", "body": "b"}"#) == nil)
        #expect(problem(kind: "generic", #"{"title": "{anything}", "body": "b"}"#) == nil)

        let unknown = AlertTemplate(title: .localized(key: "LATE", arguments: ["{driverName}", "{speed}"]), body: .text("b"))
        guard case .deadLetter(let rejection) = try Self.arrival(Fixtures.translator, overrides: EventOverrides(alert: unknown)) else {
            Issue.record("an override naming {speed} was sent")
            return
        }
        #expect(rejection.reason == .invalidOverride)
        #expect(rejection.message.hasPrefix("data.overrides.alert names {speed}, which the event's content-state"), "\(rejection.message)")
    }

    /// The 4 KB limit counts the payload each device gets: one language too long is a dead letter that names it.
    @Test func thePayloadLimitCountsEachLanguage() throws {
        var long = Self.arrivedInLanguages
        long.translations["de"] = .init(title: "Ihr Fahrer ist da", body: String(repeating: "lang ", count: 900))
        let decision = try Self.arrival(Self.translator(arrival: long), locales: [Fixtures.tokenA: "de"])
        guard case .deadLetter(let rejection) = decision else {
            Issue.record("an oversized German payload was sent")
            return
        }
        #expect(rejection.reason == .payloadTooLarge)
        #expect(rejection.message.contains("payload in de is"), "\(rejection.message)")
        // Nobody registered German: only the payloads sent count.
        #expect(try Fixtures.sent(Self.arrival(Self.translator(arrival: long))).jobs.count == 2)
    }

    /// The domain file that docs/producers.md shows decodes, with each form as it says and its
    /// content-state versions.
    @Test func theProducersGuideExampleIsADomainFileThatLoads() throws {
        let guide = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/producers.md")
        let text = try String(contentsOf: guide, encoding: .utf8)
        let blocks = text.components(separatedBy: "```json\n").dropFirst().map { $0.components(separatedBy: "```")[0] }
        let example = try #require(blocks.first { $0.contains("fallbackLanguage") })
        let configuration = try JSONDecoder().decode(TranslatorConfiguration.self, from: Data(example.utf8))
        let domain = try #require(configuration.domains.first)
        #expect(domain.contentStates.current == 2 && domain.contentStates.older.first?.changes.count == 2)
        let statuses = domain.policy.statuses
        #expect(statuses["boarding"]?.alert?.form == .localizationKey)
        #expect(statuses["landed"]?.alert?.form == .perLanguage)
    }

    @Test func languageTags() {
        for valid in ["de", "de-AT", "pt_BR", "zh-Hans-CN", "es-419", "fil"] { #expect(AlertLanguage.isValid(valid), "\(valid)") }
        for invalid in ["", "d", "german", "de-", "de--AT", "de AT", "de-ÄT", "1e", "de-a-b-c-d", String(repeating: "a", count: 36)] {
            #expect(!AlertLanguage.isValid(invalid), "\(invalid)")
        }
        let template = Self.arrivedInLanguages
        #expect(template.language(forLocale: "PT-br", fallbackLanguage: "en") == "pt-br")
        #expect(template.language(forLocale: "de-CH-x", fallbackLanguage: "en") == "de")
        #expect(template.language(forLocale: nil, fallbackLanguage: "DE") == "de")
        #expect(AlertTemplate(title: "a", body: "b").language(forLocale: "de", fallbackLanguage: "en") == nil)
    }
}
