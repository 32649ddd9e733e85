import Foundation

// Tests: Tests/LivelineStoreTests/DeadLetterConformanceTests.swift, Tests/LivelineServicesTests/ReplayDecisionTests.swift, Tests/LivelineAPITests/ActivityRouteTests.swift

extension Date {
    /// Milliseconds since 1970, rounded to the nearest: the precision every store and event
    /// time keeps.
    ///
    /// Times are held as integers so that "newer than the last applied event" compares
    /// exactly. Rounding (not truncating) matters: a date made from milliseconds can come back
    /// as x.9999 after the floating-point round trip, and truncating would then make it a
    /// millisecond older than it was stored. Dates outside ±292 million years, which no event
    /// carries, are clamped rather than trapping.
    public var millisecondsSince1970: Int64 {
        let milliseconds = (timeIntervalSince1970 * 1000).rounded()
        return Int64(exactly: milliseconds) ?? (milliseconds < 0 ? Int64.min / 2 : Int64.max / 2)
    }

    /// A date from milliseconds since 1970.
    public init(millisecondsSince1970 ms: Int64) {
        self.init(timeIntervalSince1970: TimeInterval(ms) / 1000)
    }

    /// This date at millisecond precision.
    public var roundedToMilliseconds: Date {
        Date(millisecondsSince1970: millisecondsSince1970)
    }
}
