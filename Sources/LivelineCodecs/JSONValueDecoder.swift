import Foundation

// Tests: Tests/LivelineCoreTests/JSONValueDecoderTests.swift, Tests/LivelineCodecsTests/FoundationEquivalenceTests.swift

/// Decodes a model straight from a ``JSONValue``, as `JSONDecoder` with its default
/// strategies decodes the same JSON, without writing the value out and parsing it again.
///
/// The content-state check (does it decode into the domain's `ContentState`, as
/// ActivityKit will decode it?) runs for every event; `JSONDecoder`'s own parse of bytes
/// the translator had just parsed was most of that cost. The model's `init(from:)` still
/// decides everything; this only answers its questions the way `JSONDecoder` does:
/// - numbers convert only when exact (`1.0` is an `Int`, `1.5` is not), within range;
/// - no coercion between strings, numbers and booleans;
/// - a missing key is `keyNotFound`, `null` is `valueNotFound`, a wrong kind `typeMismatch`,
///   with the same coding paths;
/// - one deliberate difference: for a number that does not fit its type `JSONDecoder`
///   reports only "The given data was not valid JSON." at the root, while this names the
///   key and the type, which is what a producer reading the dead letter needs.
/// - `Date` defers to its own `Decodable` (seconds since 2001), `Data` is base64, `URL` a
///   string, `Decimal` a number.
///
/// `JSONValueDecoderTests` checks it against `JSONDecoder` on valid and invalid input for
/// every model, including the error each one reports.
package struct JSONValueDecoder {
    package init() {}

    package func decode<Model: Decodable>(_ type: Model.Type, from value: JSONValue) throws -> Model {
        try Unwrap.value(value, as: type, at: CodingLocation.root)
    }
}

/// Turns one JSON value into one Swift value, with `JSONDecoder`'s rules and errors.
private enum Unwrap {
    /// The special types are told apart by comparing metatypes, which costs a compare;
    /// a cast of the generic type costs a runtime call for every value decoded.
    static func value<T: Decodable>(_ value: JSONValue, as type: T.Type, at location: CodingLocation) throws -> T {
        if type == Data.self {
            let text = try string(value, at: location)
            guard let data = Data(base64Encoded: text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: location.path, debugDescription: "Encountered Data is not valid Base64."))
            }
            return data as! T
        }
        if type == URL.self {
            guard let url = URL(string: try string(value, at: location)) else {
                throw DecodingError.dataCorrupted(.init(codingPath: location.path, debugDescription: "Invalid URL string."))
            }
            return url as! T
        }
        if type == Date.self, value == .null {
            // `Date` decodes itself from a number, but `JSONDecoder` names the date in this error.
            throw mismatch(Date.self, value, location)
        }
        if type == Decimal.self {
            switch value {
            case .integer(let number): return Decimal(number) as! T
            // The shortest digits that read back as the double, as the producer most likely wrote them.
            case .double(let number): return (Decimal(string: "\(number)") ?? Decimal(number)) as! T
            default: throw mismatch(Decimal.self, value, location)
            }
        }
        return try T(from: DecoderView(value: value, location: location))
    }

    static func bool(_ value: JSONValue, at location: CodingLocation) throws -> Bool {
        guard case .bool(let flag) = value else { throw mismatch(Bool.self, value, location) }
        return flag
    }

    static func string(_ value: JSONValue, at location: CodingLocation) throws -> String {
        guard case .string(let text) = value else { throw mismatch(String.self, value, location) }
        return text
    }

    static func double(_ value: JSONValue, at location: CodingLocation) throws -> Double {
        switch value {
        case .integer(let number): return Double(number)
        case .double(let number): return number
        default: throw mismatch(Double.self, value, location)
        }
    }

    static func float(_ value: JSONValue, at location: CodingLocation) throws -> Float {
        let number = try double(value, at: location)
        guard number.magnitude <= Double(Float.greatestFiniteMagnitude) else {
            throw DecodingError.dataCorrupted(.init(codingPath: location.path, debugDescription: "Parsed JSON number <\(number)> does not fit in Float."))
        }
        return Float(number)
    }

    static func integer<T: FixedWidthInteger>(_ value: JSONValue, as type: T.Type, at location: CodingLocation) throws -> T {
        switch value {
        case .integer(let number):
            if let converted = T(exactly: number) { return converted }
            throw doesNotFit(number, T.self, location)
        case .double(let number):
            if let converted = T(exactly: number) { return converted }
            throw doesNotFit(number, T.self, location)
        default:
            throw mismatch(T.self, value, location)
        }
    }

    /// A number outside its type's range; its text is formatted only for this error.
    static func doesNotFit(_ number: some CustomStringConvertible, _ type: Any.Type, _ location: CodingLocation) -> DecodingError {
        .dataCorrupted(.init(codingPath: location.path, debugDescription: "Parsed JSON number <\(number)> does not fit in \(type)."))
    }

    /// `valueNotFound` for `null`, `typeMismatch` for any other kind, as `JSONDecoder` reports them.
    static func mismatch(_ type: Any.Type, _ value: JSONValue, _ location: CodingLocation) -> DecodingError {
        if case .null = value {
            return .valueNotFound(type, .init(codingPath: location.path, debugDescription: "Cannot get value of type \(type) -- found null value instead"))
        }
        return .typeMismatch(type, .init(codingPath: location.path, debugDescription: "Expected to decode \(type) but found \(value.typeName) instead."))
    }
}

private struct IndexKey: CodingKey {
    var intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}

private struct DecoderView: Decoder {
    let value: JSONValue
    let location: CodingLocation
    var codingPath: [any CodingKey] { location.path }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else { throw Unwrap.mismatch([String: Any].self, value, location) }
        return KeyedDecodingContainer(KeyedContainer<Key>(members: members, codingPath: location.path))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = value else { throw Unwrap.mismatch([Any].self, value, location) }
        return UnkeyedContainer(items: items, codingPath: location.path)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueContainer(value: value, location: location)
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONValue]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func member(_ key: Key) throws -> JSONValue {
        guard let value = members[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(
                codingPath: codingPath, debugDescription: "No value associated with key \(key) (\"\(key.stringValue)\")."))
        }
        return value
    }

    private func at(_ key: Key) -> CodingLocation { CodingLocation(parent: codingPath, key: key) }

    func decodeNil(forKey key: Key) throws -> Bool { try member(key) == .null }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try Unwrap.bool(member(key), at: at(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try Unwrap.string(member(key), at: at(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try Unwrap.double(member(key), at: at(key)) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try Unwrap.float(member(key), at: at(key)) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try Unwrap.integer(member(key), as: type, at: at(key)) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try Unwrap.integer(member(key), as: type, at: at(key)) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try Unwrap.integer(member(key), as: type, at: at(key)) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try Unwrap.integer(member(key), as: type, at: at(key)) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try Unwrap.integer(member(key), as: type, at: at(key)) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try Unwrap.integer(member(key), as: type, at: at(key)) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try Unwrap.integer(member(key), as: type, at: at(key)) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try Unwrap.integer(member(key), as: type, at: at(key)) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try Unwrap.integer(member(key), as: type, at: at(key)) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try Unwrap.integer(member(key), as: type, at: at(key)) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try Unwrap.value(member(key), as: type, at: at(key)) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try DecoderView(value: member(key), location: at(key)).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try DecoderView(value: member(key), location: at(key)).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        DecoderView(value: members[SuperKey.super.stringValue] ?? .null, location: CodingLocation(parent: codingPath, key: SuperKey.super))
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        DecoderView(value: members[key.stringValue] ?? .null, location: at(key))
    }

    private enum SuperKey: String, CodingKey { case `super` }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let items: [JSONValue]
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0

    init(items: [JSONValue], codingPath: [any CodingKey]) {
        self.items = items
        self.codingPath = codingPath
    }

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    private var location: CodingLocation { CodingLocation(parent: codingPath, key: IndexKey(intValue: currentIndex)) }

    /// The next item, consumed once `read` returns.
    private mutating func next<T>(_ type: T.Type, _ read: (JSONValue, CodingLocation) throws -> T) throws -> T {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, .init(codingPath: location.path, debugDescription: "Unkeyed container is at end."))
        }
        let result = try read(items[currentIndex], location)
        currentIndex += 1
        return result
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Any?.self, .init(codingPath: location.path, debugDescription: "Unkeyed container is at end."))
        }
        guard items[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type) { try Unwrap.bool($0, at: $1) } }
    mutating func decode(_ type: String.Type) throws -> String { try next(type) { try Unwrap.string($0, at: $1) } }
    mutating func decode(_ type: Double.Type) throws -> Double { try next(type) { try Unwrap.double($0, at: $1) } }
    mutating func decode(_ type: Float.Type) throws -> Float { try next(type) { try Unwrap.float($0, at: $1) } }
    mutating func decode(_ type: Int.Type) throws -> Int { try next(type) { try Unwrap.integer($0, as: type, at: $1) } }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next(type) { try Unwrap.integer($0, as: type, at: $1) } }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try next(type) { try Unwrap.integer($0, as: type, at: $1) } }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try next(type) { try Unwrap.integer($0, as: type, at: $1) } }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next(type) { try Unwrap.integer($0, as: type, at: $1) } }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next(type) { try Unwrap.integer($0, as: type, at: $1) } }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next(type) { try Unwrap.integer($0, as: type, at: $1) } }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next(type) { try Unwrap.integer($0, as: type, at: $1) } }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next(type) { try Unwrap.integer($0, as: type, at: $1) } }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next(type) { try Unwrap.integer($0, as: type, at: $1) } }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next(type) { try Unwrap.value($0, as: type, at: $1) } }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next(KeyedDecodingContainer<NestedKey>.self) { try DecoderView(value: $0, location: $1).container(keyedBy: type) }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next((any UnkeyedDecodingContainer).self) { try DecoderView(value: $0, location: $1).unkeyedContainer() }
    }

    mutating func superDecoder() throws -> any Decoder {
        try next((any Decoder).self) { DecoderView(value: $0, location: $1) }
    }
}

private struct SingleValueContainer: SingleValueDecodingContainer {
    let value: JSONValue
    let location: CodingLocation
    var codingPath: [any CodingKey] { location.path }

    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try Unwrap.bool(value, at: location) }
    func decode(_ type: String.Type) throws -> String { try Unwrap.string(value, at: location) }
    func decode(_ type: Double.Type) throws -> Double { try Unwrap.double(value, at: location) }
    func decode(_ type: Float.Type) throws -> Float { try Unwrap.float(value, at: location) }
    func decode(_ type: Int.Type) throws -> Int { try Unwrap.integer(value, as: type, at: location) }
    func decode(_ type: Int8.Type) throws -> Int8 { try Unwrap.integer(value, as: type, at: location) }
    func decode(_ type: Int16.Type) throws -> Int16 { try Unwrap.integer(value, as: type, at: location) }
    func decode(_ type: Int32.Type) throws -> Int32 { try Unwrap.integer(value, as: type, at: location) }
    func decode(_ type: Int64.Type) throws -> Int64 { try Unwrap.integer(value, as: type, at: location) }
    func decode(_ type: UInt.Type) throws -> UInt { try Unwrap.integer(value, as: type, at: location) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try Unwrap.integer(value, as: type, at: location) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try Unwrap.integer(value, as: type, at: location) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try Unwrap.integer(value, as: type, at: location) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try Unwrap.integer(value, as: type, at: location) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try Unwrap.value(value, as: type, at: location) }
}
