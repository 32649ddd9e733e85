import Foundation
import LivelineCore

// Tests: Tests/LivelineRuntimeTests/OnCallOutputTests.swift

/// Times on-call types: an RFC 3339 time, or an age before now (`90s`, `30m`, `2h`, `7d`).
public enum OnCallTime {
    /// Parses `text`; the error names `option` and what it takes.
    public static func parse(_ text: String, option: String, now: Date, agesOnly: Bool = false) throws -> Date {
        if let age = age(text) { return now.addingTimeInterval(-age) }
        if !agesOnly, let time = RFC3339.parse(text) { return time.date }
        throw OnCallTimeError(
            description: agesOnly
                ? "\(option) takes an age such as 90s, 30m, 12h or 7d, not \(text)"
                : "\(option) takes an RFC 3339 time (2026-11-23T10:00:00Z) or an age such as 30m, 2h or 7d, not \(text)")
    }

    /// `text` as seconds, when it is a whole number followed by s, m, h or d.
    static func age(_ text: String) -> TimeInterval? {
        guard let unit = text.last, let value = Int(text.dropLast()), value >= 0 else { return nil }
        switch unit {
        case "s": return TimeInterval(value)
        case "m": return TimeInterval(value) * 60
        case "h": return TimeInterval(value) * 3600
        case "d": return TimeInterval(value) * 86_400
        default: return nil
        }
    }
}

/// A time an on-call command could not read.
public struct OnCallTimeError: Error, CustomStringConvertible {
    public var description: String
}
