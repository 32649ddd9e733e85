import Foundation

/// An AMQP field table: message headers and declaration arguments.
public typealias AMQPTable = [String: AMQPFieldValue]

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
