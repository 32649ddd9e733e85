import Foundation
import LivelineCodecs
import LivelineCore
import LivelineModels
import LivelineProducer
import Testing

/// The producer's bytes are exactly what the translator parses.
struct LivelineEventTests {
    static let translator = Translator(configuration: .standard(bundleId: "com.example.liveline"))
    static let time = Date(timeIntervalSince1970: 1_795_255_200.120)

    @Test func rideRoundTripsThroughTheTranslatorsParser() throws {
        let state = RideAttributes.ContentState(
            driverName: "Maria", driverPhoto: "car.fill", vehicleDescription: "White Toyota Camry",
            etaStartSeconds: 1_795_255_200, etaEndSeconds: 1_795_255_800, status: .driverArrived, distanceRemaining: 0.1)
        let attributes = RideAttributes(riderName: "Jordan", pickupLocation: "123 Main St", dropoffLocation: "456 Oak Ave")
        let event = try LivelineEvent.ride(
            activityId: "r-123", userId: "u-9", state: state, attributes: attributes, message: "Look for the white car",
            id: "ride-evt-1", time: Self.time)
        let parsed = try Self.translator.parse(try event.encoded(source: "//rides.example.com"))

        #expect(parsed.id == "ride-evt-1")
        #expect(parsed.domain == "ride" && parsed.name == "status")
        #expect(parsed.envelope.source == "//rides.example.com")
        #expect(parsed.envelope.subject == "r-123")
        #expect(parsed.time == EventTime(Self.time))
        #expect(parsed.activityId == "r-123" && parsed.userId == "u-9")
        #expect(parsed.status == "driverArrived")
        #expect(parsed.message == "Look for the white car")
        // The canonical content-state is the model's default-encoder JSON.
        let decoded = try JSONDecoder().decode(RideAttributes.ContentState.self, from: JSONValue.encoded(parsed.contentState))
        #expect(decoded == state)
        let decodedAttributes = try JSONDecoder().decode(RideAttributes.self, from: JSONValue.encoded(try #require(parsed.attributes)))
        #expect(decodedAttributes == attributes)
        #expect(event.routingKey == "ride.status")
    }

    /// A game names no user and its start names topics; overrides ride along; the parser
    /// reads back exactly what was written.
    @Test func aGamesStartWithTopicsAndOverridesRoundTrips() throws {
        let state = ScoreAttributes.ContentState(homeScore: 0, awayScore: 0, period: "1st half", clock: "0'", status: .live)
        let overrides = EventOverrides(
            priority: .high, staleDate: EventTime(Self.time.addingTimeInterval(600)), relevanceScore: 80,
            alert: AlertTemplate(title: "Kick-off", body: "Arsenal vs Chelsea", sound: "default"))
        let event = try LivelineEvent.score(
            activityId: "g-1", state: state, topics: ["team:arsenal", "league:epl"], id: "game-evt-1", time: Self.time
        ).overriding(overrides)
        let parsed = try Self.translator.parse(try event.encoded(source: "//scores.example.com"))
        #expect(parsed.userId == "")
        #expect(parsed.topics == ["team:arsenal", "league:epl"])
        #expect(parsed.overrides == overrides)
    }

    @Test func deliveryKeepsDatesAsReferenceSecondsAndRangesAsArrays() throws {
        let start = Date(timeIntervalSinceReferenceDate: 816_949_500)
        let state = DeliveryAttributes.ContentState(
            driverName: "Alex", estimatedDeliveryTime: start...start.addingTimeInterval(600), currentStep: .pickedUp)
        let event = try LivelineEvent.delivery(activityId: "o-1", userId: "u-42", state: state, time: Self.time)
        let parsed = try Self.translator.parse(try event.encoded(source: "//delivery.example.com"))
        #expect(parsed.status == "pickedUp")
        #expect(parsed.contentState["estimatedDeliveryTime"] == .array([.integer(816_949_500), .integer(816_950_100)]))
        #expect(parsed.attributes == nil)
    }

    @Test func scoreRoundTrips() throws {
        let state = ScoreAttributes.ContentState(
            homeScore: 2, awayScore: 1, period: "2nd", clock: "67:12", status: .live, lastPlay: "Goal!")
        let event = try LivelineEvent.score(activityId: "g-1", userId: "u-1", state: state, name: "goal", time: Self.time)
        let parsed = try Self.translator.parse(try event.encoded(source: "//scores.example.com"))
        #expect(parsed.status == "live" && parsed.name == "goal")
        #expect(try JSONDecoder().decode(ScoreAttributes.ContentState.self, from: JSONValue.encoded(parsed.contentState)) == state)
    }

    @Test func genericCarriesStatusInData() throws {
        var configuration = TranslatorConfiguration.standard(bundleId: "com.example.liveline")
        configuration.domains.append(DomainConfiguration(
            name: "flight", kind: .generic, attributesType: "FlightAttributes", bundleId: "com.example.liveline",
            policy: DomainPolicy(statuses: ["boarding": StatusPolicy()])))
        let event = LivelineEvent.generic(
            domain: "flight", activityId: "f-1", userId: "u-1", status: "boarding",
            contentState: .object(["gate": .string("B12")]), time: Self.time)
        let parsed = try Translator(configuration: configuration).parse(try event.encoded(source: "//flights"))
        #expect(parsed.status == "boarding")
        #expect(parsed.contentState == .object(["gate": .string("B12")]))
    }
}
