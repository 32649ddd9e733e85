import Foundation
import LivelineCodecs
import LivelineModels
@testable import LivelineCore
import Testing

/// `JSONValueDecoder` stands in for `JSONDecoder` in the content-state check, so it must
/// accept exactly what `JSONDecoder` accepts, decode the same values, and report the same
/// error (as the dead letter's detail shows it) for everything it refuses.
@Suite("Model decoding without JSONDecoder")
struct JSONValueDecoderTests {
    /// Decodes `value` both ways and compares the outcome.
    func expectSameAsJSONDecoder<Model: Codable>(_ type: Model.Type, _ value: JSONValue, sourceLocation: SourceLocation = #_sourceLocation) {
        let foundation = Result { try JSONDecoder().decode(Model.self, from: JSONValue.encoded(value)) }
        let direct = Result { try JSONValueDecoder().decode(Model.self, from: value) }
        let input = String(decoding: JSONValue.encoded(value), as: UTF8.self)
        switch (foundation, direct) {
        case (.success(let expected), .success(let actual)):
            #expect(
                (try? JSONValueEncoder().encode(actual)) == (try? JSONValueEncoder().encode(expected)),
                "\(Model.self) from \(input)", sourceLocation: sourceLocation)
        case (.failure(let expected), .failure(let actual)):
            let (expected, actual) = (ModelDecoding.describe(expected), ModelDecoding.describe(actual))
            if expected == "(root): The given data was not valid JSON." {
                // JSONDecoder's only words for a number out of its type's range; ours name it.
                #expect(actual.contains("does not fit in"), "\(Model.self) from \(input): \(actual)", sourceLocation: sourceLocation)
            } else {
                #expect(actual == expected, "\(Model.self) from \(input)", sourceLocation: sourceLocation)
            }
        case (.success, .failure(let error)):
            Issue.record("\(Model.self) from \(input): JSONDecoder accepts it, JSONValueDecoder refuses: \(error)", sourceLocation: sourceLocation)
        case (.failure(let error), .success):
            Issue.record("\(Model.self) from \(input): JSONDecoder refuses it (\(error)), JSONValueDecoder accepts", sourceLocation: sourceLocation)
        }
    }

    /// A number out of its type's range names itself, the type and where it was.
    @Test func aNumberThatDoesNotFitSaysSo() {
        struct Small: Codable { var level: UInt8 }
        for (value, text) in [(JSONValue.integer(300), "300"), (.double(1_000), "1000.0"), (.integer(-1), "-1")] {
            do {
                _ = try JSONValueDecoder().decode(Small.self, from: .object(["level": value]))
                Issue.record("\(text) decoded into a UInt8")
            } catch DecodingError.dataCorrupted(let context) {
                #expect(context.debugDescription == "Parsed JSON number <\(text)> does not fit in UInt8.")
                #expect(context.codingPath.map(\.stringValue) == ["level"])
            } catch {
                Issue.record("\(text): \(error)")
            }
        }
    }

    /// Every member of a valid value removed, nulled, and replaced by each kind of JSON value.
    func mutations(of value: JSONValue) -> [JSONValue] {
        guard case .object(let members) = value else { return [] }
        let replacements: [JSONValue] = [
            .null, .bool(true), .string("x"), .string(""), .integer(7), .integer(-1), .integer(3_000_000_000),
            .integer(.max), .double(1.5), .double(1.0), .double(-0.25), .double(1e300), .array([]), .array([.integer(1)]),
            .array([.integer(1), .integer(2)]), .object([:]), .object(["name": .string("A"), "abbreviation": .string("B")]),
        ]
        var result: [JSONValue] = [value, .object(members.merging(["unknownKey": .integer(1)]) { $1 }), .null, .array([value])]
        for key in members.keys {
            var removed = members
            removed[key] = nil
            result.append(.object(removed))
            for replacement in replacements {
                var replaced = members
                replaced[key] = replacement
                result.append(.object(replaced))
            }
        }
        return result
    }

    func expectSameForMutations<Model: Codable>(of model: Model, sourceLocation: SourceLocation = #_sourceLocation) throws {
        for value in mutations(of: try JSONValueEncoder().encode(model)) {
            expectSameAsJSONDecoder(Model.self, value, sourceLocation: sourceLocation)
        }
    }

    @Test func everyModelDecodesAndFailsLikeJSONDecoder() throws {
        let start = Date(timeIntervalSince1970: 1_795_000_000.5)
        try expectSameForMutations(of: RideAttributes.ContentState(
            driverName: "Ana", driverPhoto: "car.fill", vehicleDescription: "Blue Civic", etaStartSeconds: 60, etaEndSeconds: 90,
            status: .driverEnRoute, distanceRemaining: 2.5))
        try expectSameForMutations(of: DeliveryAttributes.ContentState(
            driverName: "Alex", estimatedDeliveryTime: start...start.addingTimeInterval(600), currentStep: .preparing))
        try expectSameForMutations(of: ScoreAttributes.ContentState(
            homeScore: 2, awayScore: 1, period: "2nd", clock: "12:00", status: .live, lastPlay: "Goal!"))
        try expectSameForMutations(of: RideAttributes(riderName: "Jordan", pickupLocation: "1 Main St", dropoffLocation: "2 Oak Ave"))
        try expectSameForMutations(of: DeliveryAttributes(orderNumber: 4521, restaurantName: "Pasta Place"))
        try expectSameForMutations(of: ScoreAttributes(
            gameId: "g-1", league: "EPL", homeTeam: .init(name: "Arsenal", abbreviation: "ARS"),
            awayTeam: .init(name: "Chelsea", abbreviation: "CHE")))
    }

    @Test func unknownEnumValuesAndBadRangesFailLikeJSONDecoder() {
        let range: (JSONValue, JSONValue) -> JSONValue = { lower, upper in
            .object(["driverName": .string("A"), "currentStep": .string("preparing"), "estimatedDeliveryTime": .array([lower, upper])])
        }
        expectSameAsJSONDecoder(DeliveryAttributes.ContentState.self, range(.integer(900), .integer(100)))
        expectSameAsJSONDecoder(DeliveryAttributes.ContentState.self, range(.integer(100), .double(100.5)))
        expectSameAsJSONDecoder(DeliveryAttributes.ContentState.self, range(.null, .integer(1)))
        expectSameAsJSONDecoder(DeliveryAttributes.ContentState.self, range(.string("x"), .integer(1)))
        for status in ["live", "LIVE", "", "final", "halftime", "unknown"] {
            expectSameAsJSONDecoder(ScoreAttributes.ContentState.self, .object([
                "homeScore": .integer(0), "awayScore": .integer(0), "period": .string("1"), "clock": .string("0:00"),
                "status": .string(status),
            ]))
        }
    }

    struct Odd: Codable {
        var data: Data
        var url: URL
        var decimal: Decimal
        var small: Float
        var byte: UInt8
        var signed: Int8
        var list: [Int?]
        var nested: [String: [Double]]
        var when: Date
        var maybe: String?
    }

    @Test func specialTypesAndIntegerWidthsDecodeLikeJSONDecoder() throws {
        let valid: [String: JSONValue] = [
            "data": .string("AAEC+g=="), "url": .string("https://example.com/a?b=c"), "decimal": .double(0.1),
            "small": .double(0.1), "byte": .integer(255), "signed": .integer(-128),
            "list": .array([.integer(1), .null, .double(3.0)]), "nested": .object(["x": .array([.integer(1), .double(1.5)])]),
            "when": .double(785_000_000.25),
        ]
        let variants: [String: [JSONValue]] = [
            "data": [.string("not base64!"), .string(""), .integer(1)],
            "url": [.string(""), .string("a b"), .string("relative/path")],
            "decimal": [.integer(12), .double(1e-7), .string("1")],
            "small": [.double(1e39), .integer(16_777_217), .double(-3.4e38)],
            "byte": [.integer(256), .integer(-1), .double(2.0), .double(2.5)],
            "signed": [.integer(-129), .integer(127)],
            "list": [.array([]), .array([.string("a")]), .array([.null, .null]), .object([:])],
            "nested": [.object([:]), .object(["x": .array([.null])]), .array([])],
            "when": [.integer(0), .string("2025-01-01T00:00:00Z"), .null],
            "maybe": [.null, .string("yes"), .integer(1)],
        ]
        expectSameAsJSONDecoder(Odd.self, .object(valid))
        for (key, values) in variants {
            for value in values {
                var members = valid
                members[key] = value
                expectSameAsJSONDecoder(Odd.self, .object(members))
            }
        }
    }
}
