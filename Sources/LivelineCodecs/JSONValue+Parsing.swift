import Foundation

// Tests: Tests/LivelineCodecsTests/FoundationEquivalenceTests.swift, Tests/LivelineCodecsTests/JSONWriterTests.swift

extension JSONValue {
    /// Parses JSON bytes (any top-level value) straight into a `JSONValue`.
    ///
    /// A byte-level reader rather than `JSONDecoder`: decoding `JSONValue` through `Codable`
    /// has to guess each node's type by trying and failing, which made parsing most of the
    /// translator's cost per event. Numbers without a fraction or exponent that fit `Int64`
    /// are integers, as before; nesting is limited so hostile input cannot exhaust the stack.
    public static func parse(_ data: Data) throws -> JSONValue {
        try JSONReader.read(data) { reader in try reader.value(depth: 0) }
    }

    /// Parses JSON text, reading the string's UTF-8 in place: no `Data` copy of a stored
    /// column first.
    public static func parse(_ text: String) throws -> JSONValue {
        var text = text
        return try text.withUTF8 { utf8 in
            try JSONReader.read(UnsafeRawBufferPointer(utf8)) { reader in try reader.value(depth: 0) }
        }
    }
}

/// Why a document is not JSON, and where.
package struct JSONSyntaxError: Error, CustomStringConvertible {
    package var message: String
    package var offset: Int
    package var description: String { "invalid JSON at byte \(offset): \(message)" }
}

/// Reads JSON bytes: into a ``JSONValue`` (``value(depth:)``), or an object member by
/// member without building it (``members(depth:_:)``), for records read on every message.
///
/// ``read(_:_:)`` and ``members(depth:_:)`` are inlinable: they take closures, and a caller in
/// another module (a push job read for every push) would otherwise call them unspecialized,
/// with a closure context per member.
package struct JSONReader {
    @usableFromInline let bytes: UnsafeRawBufferPointer
    @usableFromInline var position = 0
    @usableFromInline static let maximumDepth = 256

    @usableFromInline init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// Runs `body` on a reader over `data`, then checks that nothing but whitespace follows.
    @inlinable package static func read<Result>(_ data: Data, _ body: (inout JSONReader) throws -> Result) throws -> Result {
        try data.withUnsafeBytes { bytes in try read(bytes, body) }
    }

    /// ``read(_:_:)`` over bytes the caller holds.
    @inlinable package static func read<Result>(
        _ bytes: UnsafeRawBufferPointer, _ body: (inout JSONReader) throws -> Result
    ) throws -> Result {
        var reader = JSONReader(bytes: bytes)
        let result = try body(&reader)
        reader.skipWhitespace()
        guard reader.position == bytes.count else { throw reader.error("trailing characters") }
        return result
    }

    /// Reads an object, handing each key to `member` with the reader at its value; `member`
    /// must read the value (with ``value(depth:)`` or a nested ``members(depth:_:)``).
    @inlinable package mutating func members(depth: Int, _ member: (String, inout JSONReader) throws -> Void) throws {
        try keyedMembers(depth: depth) { key, reader in try member(key.string, &reader) }
    }

    /// ``members(depth:_:)`` with each key as it stands in the input, to be matched against
    /// the names a record knows without making a `String` of it (a push job has 17 keys).
    @inlinable package mutating func keyedMembers(depth: Int, _ member: (JSONKey, inout JSONReader) throws -> Void) throws {
        guard depth < Self.maximumDepth else { throw error("nested too deeply") }
        skipWhitespace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: "{") else { throw error("expected an object") }
        position += 1
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            return
        }
        while true {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw error("expected a key") }
            let key = try self.key()
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw error("expected ':'") }
            position += 1
            try member(key, &self)
            skipWhitespace()
            guard position < bytes.count else { throw error("unexpected end") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
            } else if bytes[position] == UInt8(ascii: "}") {
                position += 1
                return
            } else {
                throw error("expected ',' or '}'")
            }
        }
    }

    /// Whether the next value, after any whitespace, is an object.
    package mutating func nextIsObject() -> Bool {
        skipWhitespace()
        return position < bytes.count && bytes[position] == UInt8(ascii: "{")
    }

    /// The next value if it is a string; nil, once read past, if it is of another type. For a
    /// record that takes its strings as they are, without a ``JSONValue`` around each to be
    /// copied and destroyed.
    package mutating func stringIfString(depth: Int) throws -> String? {
        skipWhitespace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
            _ = try value(depth: depth)
            return nil
        }
        return try string()
    }

    @usableFromInline func error(_ message: String) -> JSONSyntaxError {
        JSONSyntaxError(message: message, offset: position)
    }

    @usableFromInline mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return
            }
        }
    }

    package mutating func value(depth: Int) throws -> JSONValue {
        guard depth < Self.maximumDepth else { throw error("nested too deeply") }
        skipWhitespace()
        guard position < bytes.count else { throw error("unexpected end") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw error("unexpected character")
        }
    }

    mutating func literal(_ text: StaticString, _ value: JSONValue) throws -> JSONValue {
        let count = text.utf8CodeUnitCount
        guard position + count <= bytes.count else { throw error("unexpected end") }
        for index in 0..<count where bytes[position + index] != text.utf8Start[index] {
            throw error("invalid literal")
        }
        position += count
        return value
    }

    mutating func object(depth: Int) throws -> JSONValue {
        var members: [String: JSONValue] = [:]
        members.reserveCapacity(8)
        try self.members(depth: depth) { key, reader in members[key] = try reader.value(depth: depth + 1) }
        return .object(members)
    }

    mutating func array(depth: Int) throws -> JSONValue {
        position += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            return .array(items)
        }
        while true {
            items.append(try value(depth: depth + 1))
            skipWhitespace()
            guard position < bytes.count else { throw error("unexpected end") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
            } else if bytes[position] == UInt8(ascii: "]") {
                position += 1
                return .array(items)
            } else {
                throw error("expected ',' or ']'")
            }
        }
    }

    /// A key: its bytes in place when it has no escapes and is ASCII (every key a record
    /// knows), or else the string it stands for.
    @usableFromInline mutating func key() throws -> JSONKey {
        let start = position
        position += 1
        let end = plainEnd()
        // `plainEnd` stops at the first non-ASCII byte, so a key that ends there is ASCII.
        if end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
            position = end + 1
            return JSONKey(raw: UnsafeRawBufferPointer(rebasing: bytes[(start + 1)..<end]))
        }
        position = start
        return JSONKey(decoded: try string())
    }

    /// Where the run of string bytes from `position` that need no attention ends: the first
    /// quote, backslash, control byte or non-ASCII byte, or the end.
    @usableFromInline func plainEnd() -> Int {
        JSONBytes.firstSpecial(in: bytes, from: position, stopAtNonASCII: true)
    }

    @usableFromInline mutating func string() throws -> String {
        position += 1
        let start = position
        // Fast path: no escapes, so the bytes are the string. ASCII (ids, base64 payloads) needs
        // no UTF-8 validation; `String(validating:)` costs several times `String(decoding:)`.
        var highBits: UInt8 = 0
        position = plainEnd()
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let text = UnsafeRawBufferPointer(rebasing: bytes[start..<position])
                position += 1
                if highBits < 0x80 { return String(decoding: text, as: UTF8.self) }
                guard let valid = String(validating: text, as: UTF8.self) else {
                    position = start
                    throw error("invalid UTF-8 in string")
                }
                return valid
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw error("control character in string") }
            highBits |= byte
            position += 1
        }
        var scalars = Array(UnsafeRawBufferPointer(rebasing: bytes[start..<position]))
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: scalars, as: UTF8.self) else { throw error("invalid UTF-8 in string") }
                return text
            case UInt8(ascii: "\\"):
                guard position < bytes.count else { throw error("unexpected end") }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(escape)
                case UInt8(ascii: "b"): scalars.append(0x08)
                case UInt8(ascii: "f"): scalars.append(0x0C)
                case UInt8(ascii: "n"): scalars.append(0x0A)
                case UInt8(ascii: "r"): scalars.append(0x0D)
                case UInt8(ascii: "t"): scalars.append(0x09)
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800..<0xDC00).contains(code) {
                        guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
                            bytes[position + 1] == UInt8(ascii: "u")
                        else { throw error("unpaired surrogate") }
                        position += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(code) {
                        throw error("unpaired surrogate")
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw error("invalid escape") }
                    scalars.append(contentsOf: Array(String(Character(scalar)).utf8))
                default:
                    throw error("invalid escape")
                }
            default:
                guard byte >= 0x20 else { throw error("control character in string") }
                scalars.append(byte)
            }
        }
        throw error("unterminated string")
    }

    mutating func hex4() throws -> UInt32 {
        guard position + 4 <= bytes.count else { throw error("unexpected end") }
        var code: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = Hex.value(of: bytes[position]) else { throw error("invalid \\u escape") }
            position += 1
            code = code << 4 | UInt32(digit)
        }
        return code
    }

    mutating func number() throws -> JSONValue {
        let start = position
        var integral = true
        let negative = bytes[position] == UInt8(ascii: "-")
        if negative { position += 1 }
        guard position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) else {
            throw error("invalid number")
        }
        // Integers (most numbers in events and jobs) are accumulated as they are read,
        // without making a String; `exact` turns false on overflow.
        var magnitude: UInt64 = 0
        var exact = true
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
        } else {
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
                let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times10.addingReportingOverflow(UInt64(bytes[position] - UInt8(ascii: "0")))
                exact = exact && !overflow1 && !overflow2
                magnitude = sum
                position += 1
            }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            integral = false
            position += 1
            let digits = position
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) { position += 1 }
            guard position > digits else { throw error("invalid number") }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            integral = false
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            let digits = position
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) { position += 1 }
            guard position > digits else { throw error("invalid number") }
        }
        if integral, exact {
            if !negative, magnitude <= UInt64(Int64.max) { return .integer(Int64(magnitude)) }
            if negative, magnitude <= UInt64(Int64.max) + 1 { return .integer(magnitude == UInt64(Int64.max) + 1 ? .min : -Int64(magnitude)) }
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        guard let double = Double(text), double.isFinite else { throw error("number out of range") }
        return .double(double)
    }
}

/// An object member's key, as ``JSONReader/keyedMembers(depth:_:)`` hands it over: valid only
/// inside the call, like the bytes it may point into.
package struct JSONKey {
    @usableFromInline enum Form {
        case raw(UnsafeRawBufferPointer)
        case decoded(String)
    }

    @usableFromInline let form: Form

    @usableFromInline init(raw: UnsafeRawBufferPointer) { form = .raw(raw) }
    @usableFromInline init(decoded: String) { form = .decoded(decoded) }

    /// The key as a string.
    @inlinable package var string: String {
        switch form {
        case .raw(let bytes): String(decoding: bytes, as: UTF8.self)
        case .decoded(let text): text
        }
    }

    /// The key's length in bytes: a record with many keys switches on it before comparing.
    @inlinable package var count: Int {
        switch form {
        case .raw(let bytes): bytes.count
        case .decoded(let text): text.utf8.count
        }
    }

    /// Lets a `switch` over a key match names: `case "id":`.
    @inlinable @inline(__always) package static func ~= (name: StaticString, key: JSONKey) -> Bool {
        key == name
    }

    /// Whether the key is `name`, compared byte for byte.
    @inlinable @inline(__always) package static func == (key: JSONKey, name: StaticString) -> Bool {
        let expected = UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        switch key.form {
        case .raw(let bytes):
            return bytes.count == expected.count && (bytes.isEmpty || memcmp(bytes.baseAddress!, expected.baseAddress!, bytes.count) == 0)
        case .decoded(let text):
            return text.utf8.elementsEqual(expected)
        }
    }
}

/// Finds the bytes of a JSON string that need attention, eight at a time: the reader's strings,
/// and the writer's (about 1 KB of strings a push job, read once in the sender and written once
/// in the translator; a byte at a time cost 350 instructions a string).
package enum JSONBytes {
    /// The index of the first byte from `start` that is a quote, a backslash or a control byte
    /// (or, with `stopAtNonASCII`, 0x80 or above), or `bytes.count` when there is none.
    @inlinable package static func firstSpecial(in bytes: UnsafeRawBufferPointer, from start: Int, stopAtNonASCII: Bool) -> Int {
        var index = start
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let nonASCII: UInt64 = stopAtNonASCII ? ~0 : 0
        while index + 8 <= bytes.count {
            let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            let quote = word ^ (ones &* 0x22)
            let backslash = word ^ (ones &* 0x5C)
            // A byte's high bit is set in `(x - 1) & ~x` when the byte is zero (or below 0x20 when
            // subtracting 0x20): exact for the first such byte, which is all that is needed.
            let found = ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word)
            if (found | word & nonASCII) & highs != 0 { break }
            index += 8
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 || (stopAtNonASCII && byte >= 0x80) { break }
            index += 1
        }
        return index
    }
}
