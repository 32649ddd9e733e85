import Foundation
import NIOConcurrencyHelpers

// Tests: Tests/LivelineAPNsTests/ProviderTokenTests.swift

/// The source of "now" for provider tokens.
///
/// A JWT's `iat` is wall-clock UNIX time, which Swift's `Clock` instants do not give, so the token
/// cadence runs over this small protocol; tests swap in ``ManualWallClock``.
public protocol WallClock: Sendable {
    /// The current wall-clock time.
    var now: Date { get }
}

/// The real clock.
public struct SystemWallClock: WallClock {
    public init() {}
    public var now: Date { Date() }
}

/// A clock that only moves when told to, for tests of the token cadence.
public final class ManualWallClock: WallClock {
    private let current: NIOLockedValueBox<Date>

    public init(now: Date) {
        self.current = NIOLockedValueBox(now)
    }

    public var now: Date { current.withLockedValue { $0 } }

    /// Moves the clock forward.
    public func advance(by seconds: TimeInterval) {
        current.withLockedValue { $0 += seconds }
    }

    /// Sets the clock.
    public func set(_ date: Date) {
        current.withLockedValue { $0 = date }
    }
}
