import Foundation
import LivelineCore
import Testing

/// Shared inputs for the tests: one translator with every domain, fixed tokens and
/// times, and access to the golden files.
enum Fixtures {
    static let bundleId = "com.example.liveline"
    /// 2026-11-21T10:00:00Z, the base of every golden event.
    static let base = Date(timeIntervalSince1970: 1_795_255_200)

    static let tokenA = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
    static let tokenB = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"
    static let startToken = "5747415254544f4b454e5f52494445525f3130303030303030303030303030"

    /// A generic domain configured purely as data: flights.
    static let flight = DomainConfiguration(
        name: "flight", kind: .generic, attributesType: "FlightAttributes", bundleId: bundleId,
        policy: DomainPolicy(
            staleAfterSeconds: 1_800,
            relevanceScore: 40,
            statuses: [
                "boarding": StatusPolicy(
                    alert: AlertTemplate(title: "{flightNumber} is boarding", body: "Gate {gate}", sound: "default"),
                    priority: .high
                ),
                "departed": StatusPolicy(),
                "landed": StatusPolicy(
                    isTerminal: true, dismissal: .after(seconds: 600),
                    alert: AlertTemplate(title: "Welcome to {destination}", body: "Arrived at gate {gate}.")
                ),
                "cancelled": StatusPolicy(isTerminal: true, dismissal: .immediate),
            ],
            pushToStartAlert: AlertTemplate(title: "{flightNumber}", body: "{origin} to {destination}")
        )
    )

    static var configuration: TranslatorConfiguration {
        var configuration = TranslatorConfiguration.standard(bundleId: bundleId)
        configuration.domains.append(flight)
        return configuration
    }

    static let translator = Translator(configuration: configuration)

    static var goldenDirectory: URL {
        get throws {
            let url = try #require(Bundle.module.url(forResource: "Golden", withExtension: nil))
            return url
        }
    }

    /// The raw bytes of a golden event.
    static func eventBody(_ name: String) throws -> Data {
        try Data(contentsOf: goldenDirectory.appendingPathComponent("events/\(name).json"))
    }

    /// A golden event, parsed.
    static func event(_ name: String) throws -> DomainEvent {
        try translator.parse(eventBody(name))
    }

    /// The expected payload bytes. One trailing newline in the file is ignored so
    /// editors that add one do not break the comparison; nothing else is.
    static func goldenPayload(_ name: String) throws -> Data {
        var data = try Data(contentsOf: goldenDirectory.appendingPathComponent("payloads/\(name).json"))
        if data.last == 0x0A { data.removeLast() }
        return data
    }

    /// The sole `.send` of a decision, or a test failure.
    static func sent(_ decision: TranslationDecision, sourceLocation: SourceLocation = #_sourceLocation) throws -> TranslationDecision.Send {
        guard case .send(let send) = decision else {
            Issue.record("expected send, got \(decision)", sourceLocation: sourceLocation)
            throw FixtureError.unexpectedDecision
        }
        return send
    }

    enum FixtureError: Error { case unexpectedDecision }

    /// Why the domain file `json` is refused, as the error tells it; nil when it loads.
    static func problem(reading json: String) -> String? {
        do {
            _ = try JSONDecoder().decode(DomainConfiguration.self, from: Data(json.utf8))
            return nil
        } catch DecodingError.dataCorrupted(let context) {
            return context.debugDescription
        } catch {
            return "\(error)"
        }
    }
}

/// Threads one activity's events through the translator, the way the service does:
/// store the new snapshot and budget after each decision.
struct ActivityRun {
    var translator = Fixtures.translator
    var snapshot: ActivitySnapshot?
    var budget = BudgetUsage.empty
    var tokens = TokenSnapshot(updateTokens: [Fixtures.tokenA, Fixtures.tokenB])
    var preferences = UserPreferences()

    /// Translates `event` at `now` (default: the event's own time plus one second)
    /// and applies the outcome.
    mutating func apply(_ event: DomainEvent, now: Date? = nil) -> TranslationDecision {
        let decision = translator.translate(
            event: event, activity: snapshot, tokens: tokens, preferences: preferences, budget: budget,
            now: now ?? event.time.date.addingTimeInterval(1)
        )
        switch decision {
        case .send(let send):
            snapshot = send.newSnapshot
            budget = send.newBudget
        case .drop(let drop):
            if let newSnapshot = drop.newSnapshot { snapshot = newSnapshot }
        case .deadLetter:
            break
        }
        return decision
    }

    /// Translates a golden event by name.
    mutating func apply(_ name: String, now: Date? = nil) throws -> TranslationDecision {
        apply(try Fixtures.event(name), now: now)
    }
}
