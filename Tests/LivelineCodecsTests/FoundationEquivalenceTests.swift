import Foundation
import LivelineCodecs
import Testing

/// Liveline reads and writes JSON with its own codecs, for speed, where Foundation would be the
/// obvious choice; these tests hold them to Foundation on documents nobody wrote by hand. Every
/// run uses fixed seeds, so a failure names a document that fails again; the iteration counts
/// keep the whole suite to a few seconds in a debug build.
@Suite("JSON codecs agree with Foundation on random documents")
struct FoundationEquivalenceTests {
    static let seeds: [UInt64] = [1, 2, 3, 0x5EED, 0xC0FFEE]

    @Test("the writer's bytes are JSONEncoder's bytes", arguments: seeds)
    func writerMatchesJSONEncoder(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        for _ in 0..<300 {
            let value = RandomJSON.value(using: &random, depth: 0)
            let ours = String(decoding: JSONValue.encoded(value), as: UTF8.self)
            let foundation = String(decoding: try CanonicalJSON.encoder().encode(value), as: UTF8.self)
            #expect(ours == foundation, "seed \(seed)")
        }
    }

    @Test("the parser reads what JSONDecoder reads, to the same value", arguments: seeds)
    func parserMatchesJSONDecoder(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        for _ in 0..<300 {
            let value = RandomJSON.value(using: &random, depth: 0)
            let bytes = RandomJSON.spaced(JSONValue.encoded(value), using: &random)
            let ours = try JSONValue.parse(bytes)
            let foundation = try JSONDecoder().decode(JSONValue.self, from: bytes)
            #expect(ours.sameNumbers(as: foundation), "seed \(seed): \(String(decoding: bytes, as: UTF8.self))")
            #expect(ours.sameNumbers(as: value), "seed \(seed): parsing what was written gives the value back")
        }
    }

    /// Strings are scanned eight bytes at a time; a byte that needs attention (a quote, an escape,
    /// a control byte, non-ASCII) is found wherever it falls in a word, at every length around one.
    @Test("a string with a special byte at every position reads as JSONDecoder reads it")
    func specialBytesAtEveryPosition() throws {
        let specials: [[UInt8]] = [
            Array(#"\""#.utf8), Array(#"\\"#.utf8), Array(#"\n"#.utf8), Array(#"\u00e9"#.utf8), Array("é".utf8),
            Array("😀".utf8), [0x7F], [0x1F], [0x00], [0x09], [0x22], [0xFF], [0xC3],
        ]
        for length in 0..<26 {
            for position in 0...length {
                for special in specials {
                    var bytes = Array(#"{"k":""#.utf8)
                    bytes += Array(repeating: UInt8(ascii: "a"), count: position) + special
                    bytes += Array(repeating: UInt8(ascii: "b"), count: length - position)
                    bytes += Array(#""}"#.utf8)
                    let data = Data(bytes)
                    let foundation = try? JSONDecoder().decode(JSONValue.self, from: data)
                    let ours = try? JSONValue.parse(data)
                    #expect(ours == foundation, "\(String(decoding: bytes, as: UTF8.self).debugDescription)")
                }
            }
        }
    }

    /// The writer finds the bytes it escapes eight at a time too: each, wherever it falls in a
    /// word, is written as JSONEncoder writes it.
    @Test("a string with a byte to escape at every position is written as JSONEncoder writes it")
    func escapedBytesAtEveryPosition() throws {
        let specials = ["\"", "\\", "\n", "\u{01}", "\u{1F}", "é", "😀", "\u{7F}", "/", "\t"]
        for length in 0..<26 {
            for position in 0...length {
                for special in specials {
                    let text = String(repeating: "a", count: position) + special + String(repeating: "b", count: length - position)
                    let ours = String(decoding: JSONValue.encoded(.string(text)), as: UTF8.self)
                    let foundation = String(decoding: try CanonicalJSON.encoder().encode(JSONValue.string(text)), as: UTF8.self)
                    #expect(ours == foundation, "\(text.debugDescription)")
                }
            }
        }
    }

    /// Corrupted documents: where Foundation refuses, the parser refuses too, and where
    /// Foundation reads a value, the parser reads the same one. A crash or a hang fails the run.
    @Test("the parser accepts and refuses what JSONDecoder does on corrupted bytes", arguments: seeds)
    func parserMatchesJSONDecoderOnCorruptedBytes(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        var refused = 0
        for _ in 0..<600 {
            let value = RandomJSON.value(using: &random, depth: 0)
            let bytes = RandomJSON.corrupted(JSONValue.encoded(value), using: &random)
            let text = String(decoding: bytes, as: UTF8.self).debugDescription
            let foundation = try? JSONDecoder().decode(JSONValue.self, from: bytes)
            let ours = try? JSONValue.parse(bytes)
            switch (ours, foundation) {
            case (let ours?, let foundation?):
                #expect(ours.sameNumbers(as: foundation), "seed \(seed): \(text)")
            case (nil, nil):
                refused += 1
            case (nil, let foundation?):
                // Foundation stops reading at a NUL byte, as if the document ended there, and so
                // reads `0<NUL>junk` as 0; RFC 8259 allows only white space after the value, which
                // is what the parser holds to. Anything else is a real difference.
                if let end = bytes.firstIndex(of: 0), let prefix = try? JSONValue.parse(bytes[..<end]), prefix.sameNumbers(as: foundation) {
                    refused += 1
                } else {
                    Issue.record("seed \(seed): JSONDecoder reads it, the parser refuses: \(text)")
                }
            case (_?, nil):
                Issue.record("seed \(seed): JSONDecoder refuses it, the parser reads it: \(text)")
            }
        }
        // The corruption must exercise the error paths, or this test would prove nothing.
        #expect(refused > 100, "only \(refused) of 600 corrupted documents were invalid")
    }

    @Test("the Codable encoder and decoder give JSONEncoder's and JSONDecoder's values", arguments: seeds)
    func codableMatchesFoundation(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        for _ in 0..<200 {
            let record = RandomRecord.make(using: &random)
            // Encoding a model: the value JSONEncoder's bytes parse to.
            let encoded = try JSONValueEncoder().encode(record)
            let viaFoundation = try JSONValue.parse(try CanonicalJSON.encoder().encode(record))
            #expect(encoded == viaFoundation, "seed \(seed): \(record)")
            // Decoding it back: what JSONDecoder decodes from the same bytes.
            let decoded = try JSONValueDecoder().decode(RandomRecord.self, from: encoded)
            let decodedByFoundation = try JSONDecoder().decode(RandomRecord.self, from: try CanonicalJSON.encoder().encode(record))
            #expect(decoded == decodedByFoundation, "seed \(seed)")
            #expect(decoded == record, "seed \(seed)")
        }
    }
}

/// A model with every kind of field the domains use: optionals, nested arrays and
/// dictionaries, dates, closed ranges, enums, integers of several widths and doubles.
struct RandomRecord: Codable, Equatable {
    enum Status: String, Codable, CaseIterable { case assigned, arriving, completed, cancelled }
    struct Team: Codable, Equatable {
        var name: String
        var score: Int
    }

    var id: String
    var status: Status
    var eta: ClosedRange<Date>
    var distance: Double?
    var count: Int32
    var total: UInt64
    var flags: [Bool]
    var teams: [Team]
    var notes: [String: String]
    var message: String?

    static func make(using random: inout SeededRandom) -> RandomRecord {
        let start = Date(timeIntervalSinceReferenceDate: Double(random.next(below: 1_000_000_000)) + 0.25)
        return RandomRecord(
            id: RandomJSON.string(using: &random),
            status: Status.allCases[random.next(below: Status.allCases.count)],
            eta: start...start.addingTimeInterval(Double(random.next(below: 3_600))),
            distance: random.next(below: 3) == 0 ? nil : RandomJSON.double(using: &random),
            count: Int32(truncatingIfNeeded: random.next()),
            total: random.next() >> 1,  // above Int64.max JSONValueEncoder refuses, by design (JSONWriterTests)
            flags: (0..<random.next(below: 4)).map { _ in random.next(below: 2) == 0 },
            teams: (0..<random.next(below: 3)).map { _ in Team(name: RandomJSON.string(using: &random), score: random.next(below: 10)) },
            notes: Dictionary(uniqueKeysWithValues: (0..<random.next(below: 3)).map { index in
                ("k\(index)" + RandomJSON.string(using: &random), RandomJSON.string(using: &random))
            }),
            message: random.next(below: 2) == 0 ? nil : RandomJSON.string(using: &random)
        )
    }
}

/// Random JSON documents, biased towards what breaks codecs: escapes, control characters,
/// non-ASCII and astral characters, integer limits and doubles at the edge of exactness.
enum RandomJSON {
    static func value(using random: inout SeededRandom, depth: Int) -> JSONValue {
        switch random.next(below: depth >= 4 ? 5 : 7) {
        case 0: return .null
        case 1: return .bool(random.next(below: 2) == 0)
        case 2: return .integer(integer(using: &random))
        case 3: return .double(double(using: &random))
        case 4: return .string(string(using: &random))
        case 5: return .array((0..<random.next(below: 5)).map { _ in value(using: &random, depth: depth + 1) })
        default:
            var members: [String: JSONValue] = [:]
            for _ in 0..<random.next(below: 5) { members[string(using: &random)] = value(using: &random, depth: depth + 1) }
            return .object(members)
        }
    }

    static func integer(using random: inout SeededRandom) -> Int64 {
        let edges: [Int64] = [0, 1, -1, .max, .min, .max - 1, .min + 1, 9_007_199_254_740_993, -9_007_199_254_740_993]
        return random.next(below: 3) == 0
            ? edges[random.next(below: edges.count)] : Int64(truncatingIfNeeded: random.next()) >> random.next(below: 63)
    }

    /// Doubles that are not whole numbers: a whole double is written without a fraction,
    /// so it reads back as an integer, in Foundation as here (compared by ``JSONValue/sameNumbers(as:)``).
    static func double(using random: inout SeededRandom) -> Double {
        let edges: [Double] = [0.1, -0.5, 1e-300, 5e-324, 1.7976931348623157e308, 123.456, 2.5e15, 1e21 + 0.5]
        if random.next(below: 3) == 0 { return edges[random.next(below: edges.count)] }
        let bits = random.next()
        let candidate = Double(bitPattern: bits)
        return candidate.isFinite ? candidate : Double(bits % 1_000_000) / 7
    }

    static func string(using random: inout SeededRandom) -> String {
        let pieces = ["a", "Z", "9", " ", "\"", "\\", "/", "\n", "\t", "\u{0}", "\u{1F}", "\u{7F}", "é", "€", "日本", "😀", "\u{2028}", "{", "]", ","]
        return (0..<random.next(below: 8)).map { _ in pieces[random.next(below: pieces.count)] }.joined()
    }

    /// The same document with white space around its structural characters, where JSON allows it.
    static func spaced(_ data: Data, using random: inout SeededRandom) -> Data {
        var result = Data()
        var inString = false
        var escaped = false
        for byte in data {
            let structural = !inString && Array("{}[],:".utf8).contains(byte)
            if structural, random.next(below: 2) == 0 { result.append(contentsOf: whitespace(using: &random)) }
            result.append(byte)
            if structural, random.next(below: 2) == 0 { result.append(contentsOf: whitespace(using: &random)) }
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
            }
        }
        return result
    }

    static func whitespace(using random: inout SeededRandom) -> [UInt8] {
        (0...random.next(below: 3)).map { _ in [0x20, 0x0A, 0x09, 0x0D][random.next(below: 4)] }
    }

    /// The document with one to three bytes replaced, inserted or removed, or cut short.
    static func corrupted(_ data: Data, using random: inout SeededRandom) -> Data {
        var bytes = [UInt8](data)
        let interesting: [UInt8] = Array("{}[]\",:\\u0-+.eE tfn".utf8) + [0x00, 0x1F, 0x80, 0xC3, 0xED, 0xFF]
        for _ in 0...random.next(below: 3) {
            let position = bytes.isEmpty ? 0 : random.next(below: bytes.count)
            let byte = interesting[random.next(below: interesting.count)]
            switch random.next(below: 4) {
            case 0 where !bytes.isEmpty: bytes[position] = byte
            case 1: bytes.insert(byte, at: position)
            case 2 where !bytes.isEmpty: bytes.remove(at: position)
            default: bytes = Array(bytes.prefix(position))
            }
        }
        return Data(bytes)
    }
}

extension JSONValue {
    /// Equality where a number is compared by value: JSON has one number type, and a whole
    /// number may come back as an integer from one reader and as a double from the other.
    func sameNumbers(as other: JSONValue) -> Bool {
        switch (self, other) {
        case (.integer(let a), .double(let b)), (.double(let b), .integer(let a)):
            return Double(a) == b
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.sameNumbers(as: $1) }
        case (.object(let a), .object(let b)):
            return a.count == b.count && a.allSatisfy { key, value in b[key].map { value.sameNumbers(as: $0) } ?? false }
        default:
            return self == other
        }
    }
}
