import Foundation

// Tests: Tests/LivelineCodecsTests/JSONWriterTests.swift, Tests/LivelineCodecsTests/FoundationEquivalenceTests.swift

/// Encodes a model straight into a ``JSONValue``: the value that parsing
/// `JSONEncoder().encode(model)` would give, without writing and reading the bytes.
///
/// Only the `Encoder` differs; the model's own `encode(to:)` decides the shape, with
/// `JSONEncoder`'s default strategies: dates defer to `Date` (seconds since 2001, as
/// ActivityKit decodes), `Data` is base64, `URL` its absolute string, non-finite
/// numbers an error. Whole doubles become integers exactly where `JSONEncoder` would
/// write them without a fraction, so ``JSONWriter`` then writes the same bytes.
/// `JSONWriterTests` checks both against `JSONEncoder` for every model.
package struct JSONValueEncoder {
    package init() {}

    package func encode<Model: Encodable>(_ model: Model) throws -> JSONValue {
        let root = Node(location: .root)
        try root.encodeValue(model)
        return root.materialize()
    }
}

/// One value under construction. A class, because containers outlive the calls that
/// create them and write into their parent's node.
private final class Node {
    enum Kind { case empty, value, object, array }

    /// A member or item: a plain value is stored as is, which spares a node per field;
    /// only nested containers and models need a node of their own.
    enum Child {
        case value(JSONValue)
        case node(Node)

        func materialize() -> JSONValue {
            switch self {
            case .value(let value): value
            case .node(let node): node.materialize()
            }
        }
    }

    var kind = Kind.empty
    var value = JSONValue.null
    /// In the order written. A model writes each key once, so a list costs an append where a
    /// dictionary hashed every key, and the object's dictionary is built once, at the end.
    var members: [(key: String, child: Child)] = []
    var items: [Child] = []
    let location: CodingLocation

    init(location: CodingLocation) {
        self.location = location
    }

    var codingPath: [any CodingKey] { location.path }

    func set(_ value: JSONValue) {
        kind = .value
        self.value = value
    }

    func materialize() -> JSONValue {
        switch kind {
        case .empty: .object([:])
        case .value: value
        case .object: .object(materializedMembers())
        case .array: .array(items.map { $0.materialize() })
        }
    }

    /// A key written twice keeps its last value, as `JSONEncoder`'s dictionary does.
    private func materializedMembers() -> [String: JSONValue] {
        var object = [String: JSONValue](minimumCapacity: members.count)
        for (key, child) in members { object[key] = child.materialize() }
        return object
    }

    /// The special types are told apart by comparing metatypes, which costs a compare; a
    /// cast of the generic value costs a runtime call for every value encoded.
    func encodeValue<Value: Encodable>(_ value: Value) throws {
        if Value.self == Data.self {
            set(.string((value as! Data).base64EncodedString()))
        } else if Value.self == URL.self {
            set(.string((value as! URL).absoluteString))
        } else if Value.self == Decimal.self {
            set(try JSONValue.parse((value as! Decimal).description))
        } else {
            try value.encode(to: EncoderView(node: self))
        }
    }

    func child(forKey key: any CodingKey) -> Node {
        let node = Node(location: CodingLocation(parent: codingPath, key: key))
        kind = .object
        members.append((key.stringValue, .node(node)))
        return node
    }

    func set(_ value: JSONValue, forKey key: any CodingKey) {
        kind = .object
        members.append((key.stringValue, .value(value)))
    }

    func appendChild() -> Node {
        let node = Node(location: CodingLocation(parent: codingPath, key: IndexKey(intValue: items.count)))
        kind = .array
        items.append(.node(node))
        return node
    }

    func append(_ value: JSONValue) {
        kind = .array
        items.append(.value(value))
    }

    /// `JSONEncoder` writes a double's shortest form with a trailing `.0` removed; such
    /// a number parses back as an integer. The path is an autoclosure: only an error needs it.
    static func number(_ double: Double, codingPath: @autoclosure () -> [any CodingKey]) throws -> JSONValue {
        guard double.isFinite else {
            throw EncodingError.invalidValue(double, .init(codingPath: codingPath(), debugDescription: "\(double) is not valid JSON"))
        }
        // Only whole numbers past 2^53 need their text read: the shortest form has a fraction
        // exactly when the double has one.
        if let whole = double.plainWholeNumber { return .integer(whole) }
        if double.rounded(.towardZero) != double { return .double(double) }
        let text = double.description
        if text.hasSuffix(".0"), let whole = Int64(text.dropLast(2)) { return .integer(whole) }
        return .double(double)
    }

    static func integer<Number: BinaryInteger>(_ number: Number, codingPath: @autoclosure () -> [any CodingKey]) throws -> JSONValue {
        guard let exact = Int64(exactly: number) else {
            throw EncodingError.invalidValue(number, .init(codingPath: codingPath(), debugDescription: "\(number) does not fit Int64"))
        }
        return .integer(exact)
    }
}

private struct IndexKey: CodingKey {
    var intValue: Int?
    var stringValue: String { "\(intValue ?? 0)" }
    init(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}

private struct EncoderView: Encoder {
    let node: Node
    var codingPath: [any CodingKey] { node.codingPath }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if node.kind != .object {
            node.kind = .object
            // Room for a typical model's fields, so the list grows once at most.
            node.members.reserveCapacity(8)
        }
        return KeyedEncodingContainer(KeyedContainer<Key>(node: node))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if node.kind != .array {
            node.kind = .array
            node.items = []
        }
        return UnkeyedContainer(node: node)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleValueContainer(node: node)
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: Node
    var codingPath: [any CodingKey] { node.codingPath }

    private func set(_ value: JSONValue, _ key: Key) { node.set(value, forKey: key) }

    mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { set(try Node.number(value, codingPath: codingPath + [key]), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        set(try Node.number(Double(value.description) ?? Double(value), codingPath: codingPath + [key]), key)
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(.integer(Int64(value)), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { set(.integer(Int64(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { set(.integer(Int64(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { set(.integer(Int64(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { set(.integer(value), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { set(try Node.integer(value, codingPath: codingPath + [key]), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.integer(Int64(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.integer(Int64(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { set(.integer(Int64(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { set(try Node.integer(value, codingPath: codingPath + [key]), key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try node.child(forKey: key).encodeValue(value) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        EncoderView(node: node.child(forKey: key)).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        EncoderView(node: node.child(forKey: key)).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        EncoderView(node: node.child(forKey: SuperKey.super))
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        EncoderView(node: node.child(forKey: key))
    }

    private enum SuperKey: String, CodingKey { case `super` }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let node: Node
    var codingPath: [any CodingKey] { node.codingPath }
    var count: Int { node.items.count }

    private func append(_ value: JSONValue) { node.append(value) }
    private var nextPath: [any CodingKey] { codingPath + [IndexKey(intValue: count)] }

    mutating func encodeNil() throws { append(.null) }
    mutating func encode(_ value: Bool) throws { append(.bool(value)) }
    mutating func encode(_ value: String) throws { append(.string(value)) }
    mutating func encode(_ value: Double) throws { append(try Node.number(value, codingPath: nextPath)) }
    mutating func encode(_ value: Float) throws { append(try Node.number(Double(value.description) ?? Double(value), codingPath: nextPath)) }
    mutating func encode(_ value: Int) throws { append(.integer(Int64(value))) }
    mutating func encode(_ value: Int8) throws { append(.integer(Int64(value))) }
    mutating func encode(_ value: Int16) throws { append(.integer(Int64(value))) }
    mutating func encode(_ value: Int32) throws { append(.integer(Int64(value))) }
    mutating func encode(_ value: Int64) throws { append(.integer(value)) }
    mutating func encode(_ value: UInt) throws { append(try Node.integer(value, codingPath: nextPath)) }
    mutating func encode(_ value: UInt8) throws { append(.integer(Int64(value))) }
    mutating func encode(_ value: UInt16) throws { append(.integer(Int64(value))) }
    mutating func encode(_ value: UInt32) throws { append(.integer(Int64(value))) }
    mutating func encode(_ value: UInt64) throws { append(try Node.integer(value, codingPath: nextPath)) }
    mutating func encode<T: Encodable>(_ value: T) throws { try node.appendChild().encodeValue(value) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        EncoderView(node: node.appendChild()).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        EncoderView(node: node.appendChild()).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        EncoderView(node: node.appendChild())
    }
}

private struct SingleValueContainer: SingleValueEncodingContainer {
    let node: Node
    var codingPath: [any CodingKey] { node.codingPath }

    private func set(_ value: JSONValue) { node.set(value) }

    mutating func encodeNil() throws { set(.null) }
    mutating func encode(_ value: Bool) throws { set(.bool(value)) }
    mutating func encode(_ value: String) throws { set(.string(value)) }
    mutating func encode(_ value: Double) throws { set(try Node.number(value, codingPath: codingPath)) }
    mutating func encode(_ value: Float) throws { set(try Node.number(Double(value.description) ?? Double(value), codingPath: codingPath)) }
    mutating func encode(_ value: Int) throws { set(.integer(Int64(value))) }
    mutating func encode(_ value: Int8) throws { set(.integer(Int64(value))) }
    mutating func encode(_ value: Int16) throws { set(.integer(Int64(value))) }
    mutating func encode(_ value: Int32) throws { set(.integer(Int64(value))) }
    mutating func encode(_ value: Int64) throws { set(.integer(value)) }
    mutating func encode(_ value: UInt) throws { set(try Node.integer(value, codingPath: codingPath)) }
    mutating func encode(_ value: UInt8) throws { set(.integer(Int64(value))) }
    mutating func encode(_ value: UInt16) throws { set(.integer(Int64(value))) }
    mutating func encode(_ value: UInt32) throws { set(.integer(Int64(value))) }
    mutating func encode(_ value: UInt64) throws { set(try Node.integer(value, codingPath: codingPath)) }
    mutating func encode<T: Encodable>(_ value: T) throws { try node.encodeValue(value) }
}
