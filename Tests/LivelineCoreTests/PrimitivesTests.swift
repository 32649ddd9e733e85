import Foundation
import LivelineCodecs
@testable import LivelineCore
import Testing

/// Job ids, RFC 3339, reasons, alert templates, JSON values.
@Suite("Primitives")
struct PrimitivesTests {
    /// Job ids are SHA-1 digests (swift-crypto's now, hand-written before); they must
    /// not change with the implementation, or a redelivery across an upgrade would not be
    /// recognised as a duplicate. The digests are Python's `hashlib.sha1` of the same text.
    @Test func jobIDsAreTheSHA1TheyAlwaysWere() {
        #expect(JobIdentity.jobId(eventId: "e-1", target: .channel(key: "game-1")) == "2e0514232418f58f1b9594a5f20233198d52bc1e")
        let token = String(repeating: "AB", count: 32)
        #expect(
            JobIdentity.jobId(eventId: String(repeating: "9f1c", count: 3), target: .device(token: token, kind: .update))
                == "170adcd6c5d3aa3953d328ca5e27599efa41e0fe")
        // Past the 512 bytes hashed from one stack buffer, the pieces are hashed one by one.
        #expect(
            JobIdentity.jobId(eventId: "e-long", target: .device(token: String(repeating: "ab", count: 300), kind: .update))
                == "08559f139b15a6c6492fb9024e1c696c762868c8")
    }

    @Test(arguments: [
        ("2026-11-21T10:00:00Z", 1_795_255_200_000),
        ("2026-11-21T10:00:00.120Z", 1_795_255_200_120),
        ("2026-11-21T10:00:00.1Z", 1_795_255_200_100),
        ("2026-11-21T10:00:00.123456789Z", 1_795_255_200_123),
        ("2026-11-21T12:00:00+02:00", 1_795_255_200_000),
        ("2026-11-21t10:00:00z", 1_795_255_200_000),
        ("1970-01-01T00:00:00Z", 0),
        ("1969-12-31T23:59:59.500Z", -500),
        ("2024-02-29T00:00:00Z", 1_709_164_800_000),
    ] as [(String, Int64)])
    func rfc3339Parses(text: String, millis: Int64) {
        #expect(RFC3339.parse(text)?.millisecondsSince1970 == millis)
    }

    @Test(arguments: [
        "", "2026-11-21", "2026-11-21T10:00:00", "2026-13-01T00:00:00Z", "2025-02-29T00:00:00Z",
        "2026-11-21T24:00:00Z", "2026-11-21T10:00:00.Z", "2026-11-21T10:00:00+2:00", "2026-11-21T10:00:00Zjunk",
        "２０２６-11-21T10:00:00Z",
    ])
    func rfc3339Rejects(text: String) {
        #expect(RFC3339.parse(text) == nil)
    }

    @Test func rfc3339FormatsUTCWithMilliseconds() {
        #expect(RFC3339.format(EventTime(millisecondsSince1970: 1_795_255_200_120)) == "2026-11-21T10:00:00.120Z")
        #expect(RFC3339.format(EventTime(millisecondsSince1970: -500)) == "1969-12-31T23:59:59.500Z")
        #expect(EventTime(millisecondsSince1970: -500).unixSeconds == -1)
        #expect(RFC3339.format(EventTime(millisecondsSince1970: 253_402_300_799_999)) == "9999-12-31T23:59:59.999Z")
        #expect(RFC3339.format(EventTime(millisecondsSince1970: 253_402_300_800_000)) == "10000-01-01T00:00:00.000Z")
        #expect(RFC3339.format(EventTime(millisecondsSince1970: -62_167_219_200_000)) == "0000-01-01T00:00:00.000Z")
    }

    /// Every formatted time parses back to itself, across leap days and centuries.
    @Test func rfc3339FormatRoundTrips() {
        var generator = SystemRandomNumberGenerator()
        let times = [Int64(0), 951_782_400_000, 4_107_456_000_000, 1_795_255_200_120] + (0..<2_000).map { _ in
            Int64.random(in: -62_167_219_200_000...253_402_300_799_999, using: &generator)
        }
        for millis in times {
            let time = EventTime(millisecondsSince1970: millis)
            #expect(RFC3339.parse(RFC3339.format(time)) == time, "\(millis)")
        }
    }

    @Test func deadLetterReasonStrings() throws {
        let reasons: [DeadLetterReason] = [.overBudget, .payloadTooLarge, .invalidEvent, .schemaMismatch, .retriesExhausted, .invalidJob, .unknownApp, .apns("BadDeviceToken")]
        #expect(reasons.map(\.rawValue) == ["over-budget", "payload-too-large", "invalid-event", "schema-mismatch", "retries-exhausted", "invalid-job", "unknown-app", "BadDeviceToken"])
        for reason in reasons {
            #expect(DeadLetterReason(rawValue: reason.rawValue) == reason)
            #expect(try JSONDecoder().decode(DeadLetterReason.self, from: JSONEncoder().encode(reason)) == reason)
        }
        #expect(String(decoding: try JSONEncoder().encode(DeadLetterReason.overBudget), as: UTF8.self) == #""over-budget""#)
    }

    @Test(arguments: ["", "abcdef0123", "ABCDEF0123", "aBcD-Ez_9", "ÄBC", "Straße İ", String(repeating: "AB", count: 100)])
    func tokensLowercaseAsStringDoes(token: String) {
        #expect(DeviceToken.lowercased(token) == token.lowercased())
        #expect(Array(DeviceToken.lowercased(token).utf8) == Array(token.lowercased().utf8))
    }

    @Test func alertPlaceholders() {
        let rendering = AlertRendering(
            message: nil,
            contentState: .object(["score": .integer(3), "name": .string("Ana"), "empty": .string("")]),
            attributes: .object(["team": .object(["abbr": .string("ARS")])])
        )
        var unresolved: [String] = []
        let alert = rendering.render(
            AlertTemplate(title: "{name} {score} {team.abbr}", body: "{message|No news} {empty|none} {missing} {open", sound: nil),
            unresolved: &unresolved
        )
        #expect(alert.title == "Ana 3 ARS")
        #expect(alert.body == "No news none  {open")
        #expect(unresolved == ["missing"])

        // Text outside ASCII around and inside placeholders, and an empty name.
        let accented = rendering.render(
            AlertTemplate(title: "⚽️ {name}–{score} 👏🏽", body: "{gone|Ölf é} {} ¿{team.abbr}?", sound: nil),
            unresolved: &unresolved
        )
        #expect(accented.title == "⚽️ Ana–3 👏🏽")
        #expect(accented.body == "Ölf é  ¿ARS?")
        #expect(unresolved == ["missing", ""])

        // Dotted paths: empty segments are skipped; a path past a leaf or a missing member is unresolved.
        let paths = rendering.render(
            AlertTemplate(title: "{team..abbr}{.team.abbr.}", body: "{team.abbr.x}{team.nope}{team}", sound: nil),
            unresolved: &unresolved
        )
        #expect(paths.title == "ARSARS")
        #expect(paths.body == #"{"abbr":"ARS"}"#)
        #expect(unresolved == ["missing", "", "team.abbr.x", "team.nope"])
    }

    @Test func jsonValueKeepsIntegersApart() throws {
        let value = try JSONValue.parse(Data(#"{"a":1,"b":1.5,"c":[true,null,"x"],"d":{}}"#.utf8))
        #expect(value["a"] == .integer(1))
        #expect(value["b"] == .double(1.5))
        #expect(String(decoding: JSONValue.encoded(value), as: UTF8.self) == #"{"a":1,"b":1.5,"c":[true,null,"x"],"d":{}}"#)
    }
}

@Suite struct JSONParsingTests {
    @Test(arguments: [
        ("0", JSONValue.integer(0)), ("-0", .integer(0)), ("42", .integer(42)), ("-7", .integer(-7)),
        ("9223372036854775807", .integer(.max)), ("-9223372036854775808", .integer(.min)),
        ("9223372036854775808", .double(9_223_372_036_854_775_808)), ("-9223372036854775809", .double(-0x1p63)),
        ("18446744073709551616", .double(18_446_744_073_709_551_616)), ("1.0", .double(1)), ("2e3", .double(2_000)),
    ])
    func numbersAreIntegersWhenTheyFit(text: String, expected: JSONValue) throws {
        #expect(try JSONValue.parse(Data(text.utf8)) == expected)
        #expect(try JSONValue.parse(text) == expected, "the same from a String")
    }

    @Test func parsesEveryKindOfValue() throws {
        let value = try JSONValue.parse(
            Data(#" {"a": [1, -2, 3.5, 1e3, true, false, null, "x\"y\\z\/\n\u00e9\ud83d\ude00"], "b": {}, "c": []} "#.utf8))
        #expect(
            value
                == .object([
                    "a": .array([
                        .integer(1), .integer(-2), .double(3.5), .double(1000), .bool(true), .bool(false), .null,
                        .string("x\"y\\z/\né😀"),
                    ]),
                    "b": .object([:]), "c": .array([]),
                ]))
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\" 1}", "{\"a\":1,}", "tru", "01", "1.", "-", "\"unterminated", "\"bad \\q escape\"",
        "\"\\ud800\"", "[1] x", "{\"a\":\"\u{01}\"}",
    ])
    func rejectsWhatIsNotJSON(_ text: String) {
        #expect(throws: (any Error).self) { try JSONValue.parse(Data(text.utf8)) }
        #expect(throws: (any Error).self) { try JSONValue.parse(text) }
    }

    @Test func deepNestingIsAnErrorNotACrash() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: (any Error).self) { try JSONValue.parse(Data(deep.utf8)) }
    }
}

/// A rendered plain text, written as the text it is.
extension RenderedAlert.Text: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
}
