import Foundation
import LivelineCodecs
import LivelineCore
import LivelineModels
import Testing

/// The JSON Schemas in docs/schemas describe what the parser and the models accept:
/// every golden event conforms, broken events do not, and each schema's `required`
/// lists match the parser's and the Swift models' keys.
@Suite("Event schemas")
struct SchemaConformanceTests {
    static let schemaDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/schemas")

    let validator = SchemaValidator(directory: schemaDirectory)

    static let goldenEvents: [(String, String)] = [
        "ride-assigned", "ride-eta-tick", "ride-arrived", "ride-completed", "ride-cancelled", "ride-failed",
        "delivery-confirmed", "delivery-picked-up", "delivery-delivered", "delivery-cancelled",
        "score-scheduled", "score-kickoff", "score-clock", "score-goal", "score-final", "score-postponed",
        "flight-boarding", "flight-departed", "flight-landed",
    ].map { name in
        let prefix = String(name.prefix { $0 != "-" })
        return (name, prefix == "flight" ? "generic" : prefix)
    }

    func json(_ data: Data) throws -> JSONValue { try JSONValue.parse(data) }

    /// Replaces the value at a path of object keys.
    func setting(_ value: JSONValue?, at path: [String], in root: JSONValue) -> JSONValue {
        guard let key = path.first, case .object(var members) = root else { return root }
        if path.count == 1 {
            members[key] = value
        } else {
            members[key] = setting(value, at: Array(path.dropFirst()), in: members[key] ?? .object([:]))
        }
        return .object(members)
    }

    @Test(arguments: goldenEvents)
    func goldenEventConforms(event: String, schema: String) throws {
        let instance = try json(Fixtures.eventBody(event))
        let errors = try validator.validate(instance, schemaFile: "\(schema).schema.json")
        #expect(errors.isEmpty, "\(event): \(errors)")
        // And the parser agrees.
        #expect(throws: Never.self) { try Fixtures.translator.parse(Fixtures.eventBody(event)) }
    }

    /// Every kind of outcome, as the workers publish it, conforms to outcome.schema.json; one
    /// with an unknown kind or a field the schema does not name does not.
    @Test func outcomesConform() throws {
        let outcomes: [EventOutcome] = [
            EventOutcome(.delivered, eventId: "e-1", domain: "ride", activityId: "r-1",
                         apnsId: "5f2e1d3c-0b4a-4c8e-9f1a-2b3c4d5e6f70", target: "update token 3e950476…", push: "update"),
            EventOutcome(.deviceGone, eventId: "e-1", domain: "ride", activityId: "r-1", reason: "Unregistered",
                         target: "update token 3e950476…", push: "update"),
            EventOutcome(.deadLettered, eventId: "e-2", domain: "ride", activityId: "r-2", reason: "invalid-override", deadLetterId: "d-1"),
            EventOutcome(.dropped, eventId: "e-3", domain: "score", activityId: "g-1", reason: "stale"),
            EventOutcome(.replayed, eventId: "e-2", domain: "ride", activityId: "r-2", reason: "invalid-override", deadLetterId: "d-1"),
        ]
        for outcome in outcomes {
            let instance = try json(outcome.cloudEvent(id: "k/\(outcome.outcome.rawValue)", source: "liveline/sender", time: Date()))
            let errors = try validator.validate(instance, schemaFile: "outcome.schema.json")
            #expect(errors.isEmpty, "\(outcome.outcome): \(errors)")
        }
        let delivered = try json(outcomes[0].cloudEvent(id: "k/delivered", source: "liveline/sender", time: Date()))
        #expect(try !validator.validate(setting(.string("lost"), at: ["data", "outcome"], in: delivered), schemaFile: "outcome.schema.json").isEmpty)
        #expect(try !validator.validate(setting(.string("x"), at: ["data", "token"], in: delivered), schemaFile: "outcome.schema.json").isEmpty)
    }

    @Test func brokenEventsDoNotConform() throws {
        var event = try json(Fixtures.eventBody("ride-arrived"))
        event = setting(.string("teleporting"), at: ["data", "contentState", "status"], in: event)
        event = setting(nil, at: ["data", "userId"], in: event)
        event = setting(.string("0.3"), at: ["specversion"], in: event)
        let errors = try validator.validate(event, schemaFile: "ride.schema.json")
        #expect(errors.contains { $0.contains("specversion") })
        #expect(errors.contains { $0.contains("userId") })
        #expect(errors.contains { $0.contains("status") })

        // A range sent as a {lowerBound, upperBound} dictionary is the classic mistake.
        let range: JSONValue = .object(["lowerBound": .integer(1), "upperBound": .integer(2)])
        let delivery = setting(range, at: ["data", "contentState", "estimatedDeliveryTime"], in: try json(Fixtures.eventBody("delivery-confirmed")))
        #expect(try !validator.validate(delivery, schemaFile: "delivery.schema.json").isEmpty)
        #expect(throws: EventError.self) { try Fixtures.translator.parse(JSONValue.encoded(delivery)) }
    }

    /// Each form of a producer's alert conforms and parses; each broken one fails both.
    @Test func alertOverridesConformInEachForm() throws {
        let arrived = try json(Fixtures.eventBody("ride-arrived"))
        func with(_ alert: String) throws -> JSONValue {
            setting(.object(["alert": try JSONValue.parse(Data(alert.utf8))]), at: ["data", "overrides"], in: arrived)
        }
        for good in [
            #"{"title": "Late", "body": "{driverName} is late"}"#,
            #"{"title": {"loc-key": "LATE"}, "body": {"loc-key": "LATE_BY", "loc-args": ["{driverName}"]}, "sound": "default"}"#,
            #"{"title": "Late", "body": "b", "translations": {"de": {"title": "Spät", "body": "c"}, "pt_BR": {"title": "d", "body": "e"}}}"#,
        ] {
            let event = try with(good)
            #expect(try validator.validate(event, schemaFile: "ride.schema.json").isEmpty, "\(good)")
            #expect(throws: Never.self) { try Fixtures.translator.parse(JSONValue.encoded(event)) }
        }
        for bad in [
            #"{"title": {"loc-args": ["x"]}, "body": "b"}"#,
            #"{"title": "a", "body": {"loc-key": "K", "loc-args": [1]}}"#,
            #"{"title": "a", "body": "b", "translations": {"german": {"title": "c", "body": "d"}}}"#,
            #"{"title": "a", "body": "b", "translations": {"de": {"title": "c"}}}"#,
        ] {
            let event = try with(bad)
            #expect(try !validator.validate(event, schemaFile: "ride.schema.json").isEmpty, "\(bad)")
            #expect(throws: EventError.self, "\(bad)") { try Fixtures.translator.parse(JSONValue.encoded(event)) }
        }
    }

    func required(_ schema: JSONValue, _ path: [String]) -> Set<String>? {
        strings(schema, path).map(Set.init)
    }

    func strings(_ schema: JSONValue, _ path: [String]) -> [String]? {
        var node: JSONValue? = schema
        for key in path {
            if case .array(let items) = node, let index = Int(key) {
                node = items.indices.contains(index) ? items[index] : nil
            } else {
                node = node?[key]
            }
        }
        guard case .array(let items) = node else { return nil }
        return items.compactMap(\.stringValue)
    }

    func keys<T: Encodable>(of value: T) throws -> Set<String> {
        let object = try JSONSerialization.jsonObject(with: JSONEncoder().encode(value))
        return Set((object as? [String: Any])?.keys.map { $0 } ?? [])
    }

    @Test func requiredKeysMatchTheParserAndTheModels() throws {
        let envelope = try validator.load("envelope.schema.json")
        #expect(required(envelope, ["required"]) == ["specversion", "id", "source", "type", "time", "data"])
        #expect(required(envelope, ["$defs", "data", "required"]) == ["activityId", "contentState"])

        let ride = try validator.load("ride.schema.json")
        // Personal domains need their owner; a game (shared) names none.
        #expect(required(ride, ["allOf", "1", "properties", "data", "required"]) == ["userId"])
        #expect(required(try validator.load("delivery.schema.json"), ["allOf", "1", "properties", "data", "required"]) == ["userId"])
        let rideState = RideAttributes.ContentState(
            driverName: "", driverPhoto: "", vehicleDescription: "", etaStartSeconds: 0, etaEndSeconds: 0,
            status: .driverAssigned, distanceRemaining: 0
        )
        #expect(required(ride, ["$defs", "contentState", "required"]) == (try keys(of: rideState)))
        #expect(required(ride, ["$defs", "attributes", "required"])
            == (try keys(of: RideAttributes(riderName: "", pickupLocation: "", dropoffLocation: ""))))

        let delivery = try validator.load("delivery.schema.json")
        let deliveryState = DeliveryAttributes.ContentState(driverName: "", estimatedDeliveryTime: Date()...Date(), currentStep: .confirmed)
        #expect(required(delivery, ["$defs", "contentState", "required"]) == (try keys(of: deliveryState)))
        #expect(required(delivery, ["$defs", "attributes", "required"]) == (try keys(of: DeliveryAttributes(orderNumber: 1, restaurantName: ""))))

        let score = try validator.load("score.schema.json")
        let scoreState = ScoreAttributes.ContentState(homeScore: 0, awayScore: 0, period: "", clock: "", status: .live)
        #expect(required(score, ["$defs", "contentState", "required"]) == (try keys(of: scoreState)))
        let team = ScoreAttributes.Team(name: "", abbreviation: "")
        #expect(required(score, ["$defs", "attributes", "required"])
            == (try keys(of: ScoreAttributes(gameId: "", league: "", homeTeam: team, awayTeam: team))))

        // Enums list exactly the model's cases.
        let enumValues = strings
        #expect(enumValues(ride, ["$defs", "contentState", "properties", "status", "enum"]) == RideStatus.allCases.map(\.rawValue))
        #expect(enumValues(delivery, ["$defs", "contentState", "properties", "currentStep", "enum"]) == DeliveryStep.allCases.map(\.rawValue))
        #expect(enumValues(score, ["$defs", "contentState", "properties", "status", "enum"]) == GameStatus.allCases.map(\.rawValue))
    }
}
