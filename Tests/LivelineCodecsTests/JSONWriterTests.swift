import Foundation
import LivelineCodecs
import LivelineModels
import Testing

/// `JSONWriter` must write exactly what `CanonicalJSON.encoder()` writes: stored
/// snapshots, golden payloads and job ids depend on the bytes.
@Suite("JSON writer")
struct JSONWriterTests {
    func written(_ value: JSONValue) -> String {
        String(decoding: JSONValue.encoded(value), as: UTF8.self)
    }

    func foundation(_ value: JSONValue) throws -> String {
        String(decoding: try CanonicalJSON.encoder().encode(value), as: UTF8.self)
    }

    @Test func stringsEscapeLikeJSONEncoder() throws {
        let pieces = ["a", "\"", "\\", "/", "\n", "\t", "\r", "\u{8}", "\u{c}", "\u{1}", "\u{1f}", "\u{7f}", "é", "😀", " "]
        var random = SeededRandom(seed: 1)
        for _ in 0..<2_000 {
            let text = (0..<Int.random(in: 0...6, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
            #expect(written(.string(text)) == (try foundation(.string(text))))
        }
    }

    @Test func numbersLikeJSONEncoder() throws {
        var random = SeededRandom(seed: 2)
        var doubles: [Double] = [0, -0.0, 1, 50, 0.5, -2.5, 1e16, 1e20, 1e21, 1e-7, 785_000_000.123, .greatestFiniteMagnitude]
        doubles += (0..<2_000).map { _ in Double.random(in: -1e12...1e12, using: &random) }
        doubles += (0..<500).map { _ in Double(bitPattern: random.next()) }.filter(\.isFinite)
        doubles += (0..<500).map { _ in Double(Int64.random(in: -9_100_000_000_000_000...9_100_000_000_000_000, using: &random)) }
        doubles += [8_999_999_999_999_999, 9e15, 9_007_199_254_740_992, -9_007_199_254_740_993]
        for number in doubles { #expect(written(.double(number)) == (try foundation(.double(number)))) }
        for number: Int64 in [0, -1, 7, 1_234_567_890, .max, .min] {
            #expect(written(.integer(number)) == (try foundation(.integer(number))))
        }
    }

    @Test func objectsSortKeysLikeJSONEncoder() throws {
        // Case, digits and non-ASCII: swift-foundation sorts by String order, not by
        // Foundation's numeric, case-insensitive comparison.
        let alphabet = Array("aAbBzZ09_-.1 é")
        var random = SeededRandom(seed: 3)
        for _ in 0..<1_000 {
            var members: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0...8, using: &random) {
                let key = String((0..<Int.random(in: 1...5, using: &random)).map { _ in alphabet.randomElement(using: &random)! })
                members[key] = .integer(Int64.random(in: -5...5, using: &random))
            }
            let value = JSONValue.object([
                "nested": .object(members), "list": .array([.null, .bool(true), .bool(false), .double(1.5), .string("a/b")]),
            ])
            #expect(written(value) == (try foundation(value)))
        }
    }

    @Test func parsedEncoderOutputIsWrittenBackUnchanged() throws {
        // The canonical content-state is kept as a parsed value and written again for
        // every payload: the bytes must survive the trip.
        let start = Date(timeIntervalSinceReferenceDate: 785_000_000.25)
        let state = try JSONValueEncoder().encode(DeliveryAttributes.ContentState(
            driverName: "Alex \"A/B\"", estimatedDeliveryTime: start...start.addingTimeInterval(1_800), currentStep: .confirmed))
        let bytes = JSONValue.encoded(state)
        #expect(JSONValue.encoded(try JSONValue.parse(bytes)) == bytes)
    }
}

/// `JSONValueEncoder` must give the value `JSONEncoder`'s bytes parse to, for every
/// model: the canonical content-state is built with it.
@Suite("Model encoding without JSONEncoder")
struct JSONValueEncoderTests {
    func expectSameAsJSONEncoder<Model: Encodable>(_ model: Model) throws {
        let bytes = try CanonicalJSON.encoder().encode(model)
        let value = try JSONValueEncoder().encode(model)
        #expect(value == (try JSONValue.parse(bytes)), "\(Model.self)")
        #expect(JSONValue.encoded(value) == bytes, "\(Model.self)")
    }

    @Test func everyModelEncodesLikeJSONEncoder() throws {
        var random = SeededRandom(seed: 4)
        for _ in 0..<300 {
            let start = Date(timeIntervalSince1970: Double.random(in: 1.7e9...1.9e9, using: &random))
            let whole = Date(timeIntervalSince1970: Double(Int.random(in: 1_700_000_000...1_900_000_000, using: &random)))
            try expectSameAsJSONEncoder(RideAttributes.ContentState(
                driverName: "Ana \"A/B\"\n", driverPhoto: "car.fill", vehicleDescription: "Blue Civic",
                etaStartSeconds: Int.random(in: -5...5_000, using: &random), etaEndSeconds: 9,
                status: RideStatus.allCases.randomElement(using: &random)!,
                distanceRemaining: [0, 3, 2.5, Double.random(in: 0...50, using: &random)].randomElement(using: &random)!))
            try expectSameAsJSONEncoder(DeliveryAttributes.ContentState(
                driverName: "Alex", estimatedDeliveryTime: start...start.addingTimeInterval(600), currentStep: .preparing))
            try expectSameAsJSONEncoder(DeliveryAttributes.ContentState(
                driverName: "Alex", estimatedDeliveryTime: whole...whole, currentStep: .delivered))
            try expectSameAsJSONEncoder(ScoreAttributes.ContentState(
                homeScore: 2, awayScore: 1, period: "2nd", clock: "12:00", status: .live,
                lastPlay: Bool.random(using: &random) ? "Goal!" : nil))
        }
        try expectSameAsJSONEncoder(RideAttributes(riderName: "Jordan", pickupLocation: "1 Main St", dropoffLocation: "2 Oak Ave"))
        try expectSameAsJSONEncoder(DeliveryAttributes(orderNumber: 4521, restaurantName: "Pasta Place"))
        try expectSameAsJSONEncoder(ScoreAttributes(
            gameId: "g-1", league: "EPL", homeTeam: .init(name: "Arsenal", abbreviation: "ARS"),
            awayTeam: .init(name: "Chelsea", abbreviation: "CHE")))
    }

    struct Odd: Encodable {
        var data = Data([0, 1, 2, 250])
        var url = URL(string: "https://example.com/a?b=c")!
        var list: [Int?] = [1, nil, 3]
        var nested: [String: [Double]] = ["x": [1, 1.5, 1e21]]
        var small: Float = 0.1
        var big: UInt64 = 42
    }

    /// Doubles whole and fractional, small and past 2^53, as fields and as array items.
    /// (Not -0.0: `JSONEncoder` writes `-0`, which parses as the integer 0, written `0`; no
    /// value is both, and the sign of a zero means nothing to a Live Activity.)
    @Test func doublesEncodeLikeJSONEncoder() throws {
        var random = SeededRandom(seed: 3)
        var doubles: [Double] = [0, 1, -1, 0.5, 9e15, 8_999_999_999_999_999, 9_007_199_254_740_992, 1e16, 1e300, -1e-300]
        doubles += (0..<500).map { _ in Double(Int64.random(in: -9_100_000_000_000_000...9_100_000_000_000_000, using: &random)) }
        doubles += (0..<500).map { _ in Double.random(in: -1e6...1e6, using: &random) }
        try expectSameAsJSONEncoder(doubles)
        for number in doubles.prefix(64) { try expectSameAsJSONEncoder(["value": number]) }
    }

    @Test func specialTypesEncodeLikeJSONEncoder() throws {
        try expectSameAsJSONEncoder(Odd())
        #expect(throws: EncodingError.self) { try JSONValueEncoder().encode([Double.nan]) }
        #expect(throws: EncodingError.self) { try JSONValueEncoder().encode([UInt64.max]) }
    }
}
