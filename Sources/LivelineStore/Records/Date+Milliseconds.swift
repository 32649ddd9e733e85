import Foundation

extension Date {
    /// Milliseconds since 1970, the precision every store keeps times at.
    ///
    /// Both stores hold times as integers so that "newer than the last applied event"
    /// compares exactly, without floating-point drift between SQLite and PostgreSQL.
    public var millisecondsSince1970: Int64 {
        Int64((timeIntervalSince1970 * 1000).rounded())
    }

    /// A date from milliseconds since 1970.
    public init(millisecondsSince1970 ms: Int64) {
        self.init(timeIntervalSince1970: TimeInterval(ms) / 1000)
    }

    /// This date truncated to the store's millisecond precision.
    public var roundedToMilliseconds: Date {
        Date(millisecondsSince1970: millisecondsSince1970)
    }
}
