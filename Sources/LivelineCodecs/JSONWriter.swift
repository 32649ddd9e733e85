import Foundation

/// Writes JSON bytes directly, byte for byte what `JSONEncoder` with `.sortedKeys` and
/// `.withoutEscapingSlashes` writes for the same values: object keys in Swift's `String`
/// order (what swift-foundation sorts by), slashes unescaped, control characters escaped
/// the same way, whole doubles without `.0`.
///
/// `JSONEncoder` costs several microseconds per value in boxing, generic metadata and
/// dictionary sorting; payloads, push jobs and stored snapshots are written for every
/// event, so the translator and the sender write them here instead. The content-state's
/// *shape* still comes from the domain's own `Codable` (see ``ContentStateContract``):
/// this only writes values that already are canonical JSON.
package struct JSONWriter {
    package private(set) var bytes: [UInt8] = []

    package init(capacity: Int = 512) {
        bytes.reserveCapacity(capacity)
    }

    package var data: Data { Data(bytes) }

    /// Appends ASCII punctuation or a pre-quoted key, as is.
    package mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Appends bytes that already are JSON, e.g. a canonical content-state.
    package mutating func json(_ encoded: some Sequence<UInt8>) {
        bytes.append(contentsOf: encoded)
    }

    /// ``json(_:)`` for `Data`, copied as one block: the generic form, called from another
    /// module, went through the sequence a byte at a time.
    package mutating func json(_ encoded: Data) {
        encoded.withUnsafeBytes { bytes.append(contentsOf: $0) }
    }

    /// `"key":`.
    package mutating func key(_ name: StaticString) {
        bytes.append(UInt8(ascii: "\""))
        raw(name)
        raw("\":")
    }

    package mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            var runStart = 0
            while true {
                let index = JSONBytes.firstSpecial(in: UnsafeRawBufferPointer(utf8), from: runStart, stopAtNonASCII: false)
                guard index < utf8.count else { break }
                let byte = utf8[index]
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                runStart = index + 1
                switch byte {
                case UInt8(ascii: "\""): raw("\\\"")
                case UInt8(ascii: "\\"): raw("\\\\")
                case 0x08: raw("\\b")
                case 0x0C: raw("\\f")
                case 0x0A: raw("\\n")
                case 0x0D: raw("\\r")
                case 0x09: raw("\\t")
                default:
                    // Lowercase hex, as JSONEncoder writes it.
                    raw("\\u00")
                    bytes.append(Self.hexDigits[Int(byte >> 4)])
                    bytes.append(Self.hexDigits[Int(byte & 0x0F)])
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<utf8.count]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    package mutating func integer(_ number: Int64) {
        if number < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = number.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[19 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude != 0
            bytes.append(contentsOf: buffer[(20 - count)...])
        }
    }

    /// JSONEncoder's form: the shortest round-tripping decimal, without a trailing `.0`.
    /// Non-finite values have no JSON form; they are written as `null` (the callers'
    /// values come from parsed JSON or validated configuration, so this never happens
    /// in practice, and a `null` fails the model's decoding loudly).
    package mutating func double(_ number: Double) {
        guard number.isFinite else { return raw("null") }
        // Written as the integer without formatting the double (relevance scores are mostly
        // whole); -0.0 is left to its text, "-0", as JSONEncoder writes it.
        if let whole = number.plainWholeNumber, number.sign == .plus || number != 0 { return integer(whole) }
        var text = number.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    package mutating func bool(_ flag: Bool) {
        flag ? raw("true") : raw("false")
    }

    package mutating func value(_ value: JSONValue) {
        switch value {
        case .null: raw("null")
        case .bool(let flag): bool(flag)
        case .integer(let number): integer(number)
        case .double(let number): double(number)
        case .string(let text): string(text)
        case .array(let items):
            bytes.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                self.value(item)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            // The members sorted with their values: sorting the keys alone meant hashing each
            // one again to look its value up.
            for (index, member) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                string(member.key)
                bytes.append(UInt8(ascii: ":"))
                self.value(member.value)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
}
