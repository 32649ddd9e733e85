import Synchronization

// Tests: Tests/LivelineAPITests/LimitTests.swift

/// The api's request limits (``APILimits``): one token bucket per user, and one per app.
///
/// A bucket starts full, each request takes a token, and tokens come back at the limit's
/// rate. A refused request takes nothing, so a client that honours `Retry-After` gets in
/// then. A user's full bucket is the same as none: buckets are dropped once full again,
/// so memory follows the users active in the last minute, not every user ever seen.
final class RequestLimiter: Sendable {
    /// Who ran out.
    enum Scope: String, Sendable {
        case user, app
    }

    struct Refusal: Sendable, Equatable {
        var scope: Scope
        /// Whole seconds until a token is back (at least 1).
        var retryAfter: Int
    }

    private struct Bucket {
        var tokens: Double
        var at: Double

        /// Refills to `now`, then takes a token if there is one.
        mutating func take(capacity: Double, perSecond: Double, now: Double) -> Refusal? {
            tokens = min(capacity, tokens + (now - at) * perSecond)
            at = now
            guard tokens < 1 else {
                tokens -= 1
                return nil
            }
            // Less a nanosecond: 10.000000001 s of floating-point error is 10 s, not 11.
            return Refusal(scope: .user, retryAfter: max(1, Int(((1 - tokens) / perSecond - 1e-9).rounded(.up))))
        }

        func isFull(capacity: Double, perSecond: Double, now: Double) -> Bool {
            tokens + (now - at) * perSecond >= capacity
        }
    }

    private struct State {
        var users: [String: Bucket] = [:]
        var apps: [String: Bucket] = [:]
        var nextSweep: Double
    }

    private let state: Mutex<State>
    private let user: (capacity: Double, perSecond: Double)
    private let app: (capacity: Double, perSecond: Double)
    /// Seconds on a monotonic clock; tests pass their own.
    private let now: @Sendable () -> Double

    init(_ limits: APILimits, now: @escaping @Sendable () -> Double = RequestLimiter.monotonicSeconds) {
        user = (Double(limits.userRequestsPerMinute), Double(limits.userRequestsPerMinute) / 60)
        app = (Double(limits.appRequestsPerSecond), Double(limits.appRequestsPerSecond))
        self.now = now
        let start = now()
        state = Mutex(State(nextSweep: start + 60))
    }

    /// Takes a request of `userID` (a user's key, unique across apps) from its bucket and its
    /// app's, or says which one is empty. The user's bucket is checked first: one user's
    /// burst is refused as theirs, not the app's.
    func admit(userID: String, app appID: String = "") -> Refusal? {
        let now = now()
        return state.withLock { state in
            if now >= state.nextSweep {
                state.users = state.users.filter { !$0.value.isFull(capacity: user.capacity, perSecond: user.perSecond, now: now) }
                state.nextSweep = now + 60
            }
            var bucket = state.users[userID] ?? Bucket(tokens: user.capacity, at: now)
            if let refusal = bucket.take(capacity: user.capacity, perSecond: user.perSecond, now: now) {
                state.users[userID] = bucket
                return refusal
            }
            var appBucket = state.apps[appID] ?? Bucket(tokens: app.capacity, at: now)
            defer { state.apps[appID] = appBucket }
            if var refusal = appBucket.take(capacity: app.capacity, perSecond: app.perSecond, now: now) {
                // The user's token goes back: the request was not served.
                bucket.tokens += 1
                state.users[userID] = bucket
                refusal.scope = .app
                return refusal
            }
            state.users[userID] = bucket
            return nil
        }
    }

    private static let origin = ContinuousClock.now

    /// Users with a bucket (for tests).
    var trackedUsers: Int { state.withLock { $0.users.count } }

    @Sendable static func monotonicSeconds() -> Double {
        let elapsed = ContinuousClock.now - origin
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
