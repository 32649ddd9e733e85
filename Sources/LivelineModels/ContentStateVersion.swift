// Tests: Tests/LivelineCoreTests/ContentStateVersionTests.swift

/// A content-state model that older app builds still decode in an older form.
///
/// ActivityKit drops a push whose `content-state` the installed app cannot decode, and the
/// Live Activity silently stops updating. A model that changed declares each older form it
/// shipped with, so the server can send every device the newest one it decodes.
public protocol VersionedContentState {
    /// The version this model is. An app declares the version it was built with when it
    /// registers a token (`contentStateVersion`).
    static var contentStateVersion: Int { get }
    /// The older versions, newest first, each with what the next newer version changed.
    static var olderContentStates: [ContentStateVersion] { get }
}

/// One older content-state version and what the next newer version changed in it.
public struct ContentStateVersion: Hashable, Sendable, Codable {
    /// The version number, lower than every newer one.
    public var version: Int
    /// What the next newer version added or relaxed; undone in order to make this one.
    public var changes: [ContentStateChange]

    public init(_ version: Int, changes: [ContentStateChange]) {
        self.version = version
        self.changes = changes
    }
}

/// One change a newer content-state version made, as the server undoes it for older apps.
///
/// JSON (a generic domain's `contentStateVersions`): `{"addedCase": "arriving", "in": "status",
/// "shownAs": "inProgress"}` (`shownAs` absent or null: the older app has no equivalent, and
/// such a state is not sent to it), `{"addedField": "distanceRemaining"}`, and
/// `{"madeOptional": "lastPlay", "default": ""}`.
public enum ContentStateChange: Hashable, Sendable {
    /// A new value of an enum field: the older app shows `shownAs` instead, or cannot show it.
    case addedCase(field: String, value: String, shownAs: String?)
    /// A new field: left out for the older app.
    case addedField(String)
    /// A field the older app requires: it gets `default` when the newer state has none.
    case madeOptional(field: String, default: ContentStateDefault)

    /// A new case of an enum field, shown to the older app as `shownAs` (nil: not at all).
    public static func added<Value: RawRepresentable>(
        _ value: Value, in field: some CodingKey, shownAs: Value?
    ) -> Self where Value.RawValue == String {
        .addedCase(field: field.stringValue, value: value.rawValue, shownAs: shownAs?.rawValue)
    }

    /// A new field.
    public static func added(_ field: some CodingKey) -> Self { .addedField(field.stringValue) }

    /// A field that used to be required, with the value the older app gets when it is absent.
    public static func madeOptional(_ field: some CodingKey, default value: ContentStateDefault) -> Self {
        .madeOptional(field: field.stringValue, default: value)
    }

    /// The content-state field the change is about.
    public var field: String {
        switch self {
        case .addedCase(let field, _, _), .madeOptional(let field, _): field
        case .addedField(let field): field
        }
    }
}

/// The value an older app gets for a field it requires: a JSON scalar.
public enum ContentStateDefault: Hashable, Sendable, Codable,
    ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral
{
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "a default must be a string, number or boolean")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        }
    }
}

extension ContentStateChange: Codable {
    private enum Keys: String, CodingKey { case addedCase, `in`, shownAs, addedField, madeOptional, `default` }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        if let value = try container.decodeIfPresent(String.self, forKey: .addedCase) {
            self = .addedCase(
                field: try container.decode(String.self, forKey: .in), value: value,
                shownAs: try container.decodeIfPresent(String.self, forKey: .shownAs))
        } else if let field = try container.decodeIfPresent(String.self, forKey: .addedField) {
            self = .addedField(field)
        } else if let field = try container.decodeIfPresent(String.self, forKey: .madeOptional) {
            self = .madeOptional(field: field, default: try container.decode(ContentStateDefault.self, forKey: .default))
        } else {
            throw DecodingError.dataCorrupted(.init(
                codingPath: decoder.codingPath, debugDescription: "a change is addedCase (with in), addedField or madeOptional (with default)"))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        switch self {
        case .addedCase(let field, let value, let shownAs):
            try container.encode(value, forKey: .addedCase)
            try container.encode(field, forKey: .in)
            try container.encode(shownAs, forKey: .shownAs)
        case .addedField(let field):
            try container.encode(field, forKey: .addedField)
        case .madeOptional(let field, let value):
            try container.encode(field, forKey: .madeOptional)
            try container.encode(value, forKey: .default)
        }
    }
}
