import Foundation

// Tests: Tests/LivelineAMQPTests/AMQPTableTests.swift

/// An AMQP field table: message headers and declaration arguments, a map from names to
/// values.
///
/// Kept as a list in the order it was written or read, and searched by name. A table holds a
/// handful of entries, where a list beats a hash table: as a `Dictionary` every delivery
/// hashed its six header names to build it and hashed again for each of the four the sender
/// reads, 9,000 instructions a job of the sender's 163,000.
public struct AMQPTable: Sendable, Hashable, ExpressibleByDictionaryLiteral, Sequence {
    public typealias Element = (key: String, value: AMQPFieldValue)

    /// The entries in table order (internal: the C bridge reads them in place).
    private(set) var entries: [Element]

    /// An empty table.
    public init() {
        entries = []
    }

    /// A table of `elements`; a name given twice keeps its last value.
    public init(dictionaryLiteral elements: (String, AMQPFieldValue)...) {
        self.init()
        entries.reserveCapacity(elements.count)
        for (name, value) in elements { self[name] = value }
    }

    /// The value under `name`, or nil; setting nil removes the entry.
    public subscript(name: String) -> AMQPFieldValue? {
        get { entries.first { Self.same($0.key, name) }?.value }
        set {
            let index = entries.firstIndex { Self.same($0.key, name) }
            switch (index, newValue) {
            case (let index?, let value?): entries[index].value = value
            case (let index?, nil): entries.remove(at: index)
            case (nil, let value?): entries.append((name, value))
            case (nil, nil): break
            }
        }
    }

    /// Names compared by length first, which tells most apart in a few instructions where
    /// `==` alone costs about a hundred.
    @inline(__always)
    private static func same(_ name: String, _ other: String) -> Bool {
        name.utf8.count == other.utf8.count && name == other
    }

    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }
    /// The names, in table order.
    public var keys: [String] { entries.map(\.key) }

    public func makeIterator() -> IndexingIterator<[Element]> {
        entries.makeIterator()
    }

    /// Reserves room for `count` entries, for a table built entry by entry.
    public mutating func reserveCapacity(_ count: Int) {
        entries.reserveCapacity(count)
    }

    /// This table with `other`'s entries added; for a name in both, `combine` picks the value.
    public func merging(
        _ other: AMQPTable, uniquingKeysWith combine: (AMQPFieldValue, AMQPFieldValue) throws -> AMQPFieldValue
    ) rethrows -> AMQPTable {
        var merged = self
        for (name, value) in other { merged[name] = try self[name].map { try combine($0, value) } ?? value }
        return merged
    }

    /// The values transformed, as a dictionary.
    public func mapValues<T>(_ transform: (AMQPFieldValue) throws -> T) rethrows -> [String: T] {
        var mapped: [String: T] = [:]
        for (name, value) in entries { mapped[name] = try transform(value) }
        return mapped
    }

    /// Equal when they map the same names to the same values, in any order (as on the wire,
    /// where order carries no meaning).
    public static func == (lhs: AMQPTable, rhs: AMQPTable) -> Bool {
        lhs.count == rhs.count && lhs.entries.allSatisfy { rhs[$0.key] == $0.value }
    }

    public func hash(into hasher: inout Hasher) {
        // Order-independent, to agree with ==.
        var combined = 0
        for (name, value) in entries {
            var entry = Hasher()
            entry.combine(name)
            entry.combine(value)
            combined ^= entry.finalize()
        }
        hasher.combine(count)
        hasher.combine(combined)
    }
}

/// A value in an AMQP field table.
///
/// Integers are carried as 64-bit (`l` on the wire), which RabbitMQ accepts for every
/// numeric argument (`x-delivery-limit`, `x-message-ttl`, …).
public enum AMQPFieldValue: Sendable, Hashable {
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case decimal(scale: UInt8, value: UInt32)
    case string(String)
    case bytes([UInt8])
    /// Seconds since the Unix epoch.
    case timestamp(UInt64)
    case array([AMQPFieldValue])
    case table(AMQPTable)
    case void

    /// The string, if this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The boolean, if this is a boolean.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The integer, if this is any integer kind that fits in `Int64`.
    public var intValue: Int64? {
        switch self {
        case .int(let value): return value
        case .uint(let value): return Int64(exactly: value)
        case .timestamp(let value): return Int64(exactly: value)
        default: return nil
        }
    }

    /// The nested table, if this is a table.
    public var tableValue: AMQPTable? {
        if case .table(let value) = self { return value }
        return nil
    }

    /// The elements, if this is an array.
    public var arrayValue: [AMQPFieldValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The time, if this is a timestamp.
    public var dateValue: Date? {
        if case .timestamp(let value) = self { return Date(timeIntervalSince1970: TimeInterval(value)) }
        return nil
    }
}

extension AMQPFieldValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
