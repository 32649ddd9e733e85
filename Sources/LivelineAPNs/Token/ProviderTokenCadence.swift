import Foundation

// Tests: Tests/LivelineAPNsTests/ModelTests.swift, Tests/LivelineAPNsTests/ProviderTokenTests.swift

/// The refresh rules for one signing key, as a pure state machine (no clock, no crypto).
///
/// Apple: refresh at most once per 20 minutes (else 429 TooManyProviderTokenUpdates) and at least
/// once per 60 minutes (else 403 ExpiredProviderToken). We refresh after 50 minutes.
///
/// ExpiredProviderToken means APNs thinks the token is more than an hour old. If our token is younger
/// than 20 minutes by our own clock, the clocks disagree and a new token would carry the same skew while
/// burning the refresh budget, so an invalidation inside the 20-minute floor does **not** mint; the
/// caller reports `.providerToken` instead of looping. Past the floor it mints exactly once, however
/// many requests reported the same stale token, because ``invalidate(ifIssuedAt:)`` only acts on the
/// token that is still current.
struct ProviderTokenCadence: Sendable {
    enum Decision: Equatable {
        case use(APNsProviderToken)
        case mint
    }

    var refreshAfter: TimeInterval = 50 * 60
    var minimumRefreshInterval: TimeInterval = 20 * 60
    private(set) var current: APNsProviderToken?
    private(set) var invalidated = false

    func decide(now: Date) -> Decision {
        guard let current else { return .mint }
        let age = now.timeIntervalSince(current.issuedAt)
        if age >= refreshAfter { return .mint }
        if invalidated && age >= minimumRefreshInterval { return .mint }
        return .use(current)
    }

    mutating func minted(_ token: APNsProviderToken) {
        current = token
        invalidated = false
    }

    /// Marks the current token stale if it is the one the caller used. Returns whether it did.
    mutating func invalidate(ifIssuedAt issuedAt: Date) -> Bool {
        guard let current, current.issuedAt == issuedAt, !invalidated else { return false }
        invalidated = true
        return true
    }
}
