import Foundation
import LivelineCodecs

// Tests: Tests/LivelineCoreTests/PrimitivesTests.swift

/// An instant with millisecond precision, as carried by a CloudEvent's `time`.
///
/// Kept as integer milliseconds since the Unix epoch so comparisons (stale/duplicate
/// checks, supersede checks) are exact and never suffer floating-point drift.
public struct EventTime: Hashable, Comparable, Sendable {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    public var millisecondsSince1970: Int64

    /// Creates a time from Unix milliseconds.
    public init(millisecondsSince1970: Int64) {
        self.millisecondsSince1970 = millisecondsSince1970
    }

    /// Creates a time from a `Date`, at the nearest millisecond (see
    /// `Date.millisecondsSince1970` for why not truncated).
    public init(_ date: Date) {
        self.millisecondsSince1970 = date.millisecondsSince1970
    }

    /// The instant as a `Date`.
    public var date: Date {
        Date(timeIntervalSince1970: TimeInterval(millisecondsSince1970) / 1000)
    }

    /// Whole Unix seconds, rounded down: the form of `aps.timestamp` and the APNs
    /// date fields.
    public var unixSeconds: Int64 {
        let (quotient, remainder) = millisecondsSince1970.quotientAndRemainder(dividingBy: 1000)
        return remainder < 0 ? quotient - 1 : quotient
    }

    /// This time moved by whole seconds.
    public func adding(seconds: Int64) -> EventTime {
        EventTime(millisecondsSince1970: millisecondsSince1970 &+ seconds &* 1000)
    }

    public static func < (lhs: EventTime, rhs: EventTime) -> Bool {
        lhs.millisecondsSince1970 < rhs.millisecondsSince1970
    }
}

extension EventTime: Codable {
    /// Decodes from an RFC 3339 string, the form used in every Liveline record.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let time = RFC3339.parse(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an RFC 3339 time: \(text)")
        }
        self = time
    }

    /// Encodes as an RFC 3339 UTC string with milliseconds, e.g. `2026-11-21T10:00:00.120Z`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(RFC3339.format(self))
    }
}

extension EventTime: CustomStringConvertible {
    /// RFC 3339 UTC with milliseconds.
    public var description: String { RFC3339.format(self) }
}
