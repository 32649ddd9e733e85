import Foundation

// Tests: Tests/LivelineCodecsTests/FoundationEquivalenceTests.swift, Tests/LivelineCodecsTests/JSONWriterTests.swift

/// A JSON document held as a value, so opaque producer data (a generic domain's
/// content-state and attributes, a stored snapshot) can pass through without a Swift
/// model and still be `Sendable`, `Hashable` and deterministic to encode.
///
/// Integers are kept apart from doubles so that `3` stays `3` on the way out.
public enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The members when this is an object.
    public var objectValue: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The text when this is a string.
    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// A member of an object, or nil for a missing key or a non-object.
    public subscript(key: String) -> JSONValue? {
        objectValue?[key]
    }

    /// The name of the JSON type, for error messages.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .integer, .double: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// The value as it would read in a message or an alert: strings bare, numbers in
    /// JSON form, anything else as compact JSON.
    package var displayText: String {
        switch self {
        case .string(let text): text
        case .integer(let number): String(number)
        case .bool(let flag): flag ? "true" : "false"
        case .null: ""
        default: String(decoding: JSONValue.encoded(self), as: UTF8.self)
        }
    }
}

extension JSONValue: Codable {
    /// Decodes any JSON value; integers that fit `Int64` stay integers.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let number = try? container.decode(Int64.self) {
            self = .integer(number)
        } else if let number = try? container.decode(Double.self) {
            self = .double(number)
        } else if let text = try? container.decode(String.self) {
            self = .string(text)
        } else if let items = try? container.decode([JSONValue].self) {
            self = .array(items)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// Encodes the value as the JSON it holds.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let flag): try container.encode(flag)
        case .integer(let number): try container.encode(number)
        case .double(let number): try container.encode(number)
        case .string(let text): try container.encode(text)
        case .array(let items): try container.encode(items)
        case .object(let members): try container.encode(members)
        }
    }
}

extension JSONValue {
    /// Deterministic bytes: sorted keys, unescaped slashes; the same bytes `JSONEncoder`
    /// with `.sortedKeys` and `.withoutEscapingSlashes` writes, without its cost.
    public static func encoded(_ value: JSONValue) -> Data {
        var writer = JSONWriter()
        writer.value(value)
        return writer.data
    }
}
