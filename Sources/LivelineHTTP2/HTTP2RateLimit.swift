import NIOCore

// Tests: Tests/LivelineHTTP2Tests/HTTP2SessionTests.swift

/// A token bucket over the caller's clock: `burst` events at once, then `perSecond` on average.
///
/// The session counts the peer's RST_STREAM, SETTINGS and PING frames with it. Each of those costs
/// this endpoint work (or, for the two last, an answer) while costing the peer a few bytes, which is
/// what rapid-reset (CVE-2023-44487) and control-frame floods exploit; a bucket keeps a steady,
/// honest peer always under the limit while a burst above it ends the connection.
package struct HTTP2RateLimit: Sendable {
    package var burst: Int
    package var perSecond: Int
    private var tokens: Double
    private var last: NIODeadline?

    package init(burst: Int, perSecond: Int) {
        self.burst = burst
        self.perSecond = perSecond
        self.tokens = Double(burst)
    }

    /// Takes one token; `false` when the bucket is empty, that is when the peer went over the limit.
    package mutating func take(now: NIODeadline) -> Bool {
        if let last, now > last {
            tokens = min(Double(burst), tokens + Double((now - last).nanoseconds) / 1e9 * Double(perSecond))
        }
        if last.map({ now > $0 }) ?? true { last = now }
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
