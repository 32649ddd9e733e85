import Foundation
import LivelineModels
import Testing

/// The models must encode exactly as ActivityKit decodes with default strategies:
/// `Date` as seconds since 2001-01-01, `ClosedRange` as a two-element array, enums as
/// their raw strings, nil optionals omitted.
@Suite("Model encodings")
struct ModelEncodingTests {
    func json<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    @Test func rideStateMatchesTheReferenceShape() throws {
        let state = RideAttributes.ContentState(
            driverName: "Maria", driverPhoto: "car.fill", vehicleDescription: "White Toyota Camry",
            etaStartSeconds: 1_700_000_000, etaEndSeconds: 1_700_000_300, status: .driverArrived, distanceRemaining: 0.5
        )
        #expect(try json(state) == #"{"distanceRemaining":0.5,"driverName":"Maria","driverPhoto":"car.fill","etaEndSeconds":1700000300,"etaStartSeconds":1700000000,"status":"driverArrived","vehicleDescription":"White Toyota Camry"}"#)
        let decoded = try JSONDecoder().decode(RideAttributes.ContentState.self, from: JSONEncoder().encode(state))
        #expect(decoded == state)
        #expect(state.etaRange.lowerBound == Date(timeIntervalSince1970: 1_700_000_000))
    }

    @Test func rideAttributesMatchTheReferenceShape() throws {
        let attributes = RideAttributes(riderName: "Jordan", pickupLocation: "123 Main St", dropoffLocation: "456 Oak Ave")
        #expect(try json(attributes) == #"{"dropoffLocation":"456 Oak Ave","pickupLocation":"123 Main St","riderName":"Jordan"}"#)
    }

    @Test func etaRangeNeverTrapsOnReversedBounds() {
        let state = RideAttributes.ContentState(
            driverName: "", driverPhoto: "", vehicleDescription: "", etaStartSeconds: 10, etaEndSeconds: 5,
            status: .driverEnRoute, distanceRemaining: 0
        )
        #expect(state.etaRange.lowerBound == state.etaRange.upperBound)
    }

    @Test func deliveryRangeIsAnArrayOf2001ReferenceSeconds() throws {
        // 2026-11-21T10:00:00Z is 1795255200 Unix seconds and 816948000 reference seconds.
        let start = Date(timeIntervalSince1970: 1_795_255_200)
        let state = DeliveryAttributes.ContentState(
            driverName: "Alex", estimatedDeliveryTime: start...start.addingTimeInterval(1_800.5), currentStep: .pickedUp
        )
        #expect(try json(state) == #"{"currentStep":"pickedUp","driverName":"Alex","estimatedDeliveryTime":[816948000,816949800.5]}"#)
        let decoded = try JSONDecoder().decode(DeliveryAttributes.ContentState.self, from: JSONEncoder().encode(state))
        #expect(decoded == state)
    }

    @Test func deliveryStepsIncludeCancelled() {
        #expect(DeliveryStep.allCases.map(\.rawValue) == ["confirmed", "preparing", "pickedUp", "delivering", "delivered", "cancelled"])
    }

    @Test func scoreStateOmitsNilLastPlay() throws {
        let state = ScoreAttributes.ContentState(homeScore: 1, awayScore: 0, period: "Q3", clock: "12:34", status: .live)
        #expect(try json(state) == #"{"awayScore":0,"clock":"12:34","homeScore":1,"period":"Q3","status":"live"}"#)
        var withPlay = state
        withPlay.lastPlay = "Goal!"
        let decoded = try JSONDecoder().decode(ScoreAttributes.ContentState.self, from: JSONEncoder().encode(withPlay))
        #expect(decoded == withPlay)
    }

    @Test func scoreAttributesNestTeams() throws {
        let attributes = ScoreAttributes(
            gameId: "g-1", league: "NBA", homeTeam: .init(name: "Lakers", abbreviation: "LAL"),
            awayTeam: .init(name: "Celtics", abbreviation: "BOS")
        )
        #expect(try json(attributes) == #"{"awayTeam":{"abbreviation":"BOS","name":"Celtics"},"gameId":"g-1","homeTeam":{"abbreviation":"LAL","name":"Lakers"},"league":"NBA"}"#)
    }

    @Test func unknownStatusDoesNotDecode() {
        let text = #"{"homeScore":0,"awayScore":0,"period":"1","clock":"0","status":"abandoned"}"#
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(ScoreAttributes.ContentState.self, from: Data(text.utf8))
        }
    }
}
