import Foundation
import LivelineStore

// Tests: Tests/LivelineAPITests/ActivityRouteTests.swift

extension Date {
    /// ISO 8601 in UTC with exactly the store's millisecond precision.
    ///
    /// Built from the integer milliseconds: formatting the floating-point date directly can
    /// print .122 for a time stored as .123.
    var iso8601Milliseconds: String {
        let ms = millisecondsSince1970
        let seconds = ms >= 0 ? ms / 1000 : (ms - 999) / 1000
        let fraction = ms - seconds * 1000
        let whole = Date(timeIntervalSince1970: TimeInterval(seconds)).formatted(Date.ISO8601FormatStyle())
        return String(whole.dropLast()) + String(format: ".%03dZ", Int(fraction))
    }

    /// Encodes dates as ``iso8601Milliseconds``.
    static let millisecondsStrategy: JSONEncoder.DateEncodingStrategy = .custom { date, encoder in
        var container = encoder.singleValueContainer()
        try container.encode(date.iso8601Milliseconds)
    }
}
