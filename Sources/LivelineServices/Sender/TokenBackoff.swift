import Synchronization

// Tests: Tests/LivelineServicesTests/SenderDecisionTests.swift, Tests/LivelineServicesTests/SenderRetryTests.swift

/// Per-token back-off after 429 TooManyRequests: APNs throttles one device at a time, so
/// only that token's jobs wait (in a retry tier) while every other token keeps flowing.
///
/// Kept in memory only: after a restart the worst case is one more 429 per throttled
/// token, which starts the back-off again.
final class TokenBackoff: Sendable {
    private struct Entry {
        var until: ContinuousClock.Instant
        var strikes: Int
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var nextPrune: ContinuousClock.Instant
    }

    private let initial: Duration
    private let maximum: Duration
    private let state: Mutex<State>

    init(initial: Duration, maximum: Duration) {
        self.initial = initial
        self.maximum = maximum
        self.state = Mutex(State(nextPrune: .now + initial))
    }

    /// The time left before `token` may be sent to again, or nil if it may be sent now.
    func remaining(for token: String, now: ContinuousClock.Instant? = nil) -> Duration? {
        state.withLock { state in
            // Most of the time no token is throttled: no hashing and no clock read then.
            guard !state.entries.isEmpty, let entry = state.entries[token] else { return nil }
            let now = now ?? .now
            return entry.until > now ? entry.until - now : nil
        }
    }

    /// Records a 429 for `token`, doubling its back-off on every strike.
    ///
    /// - Returns: how long the token now waits.
    @discardableResult
    func throttled(_ token: String, now: ContinuousClock.Instant = .now) -> Duration {
        state.withLock { state in
            let strikes = (state.entries[token]?.strikes ?? 0) + 1
            var wait = initial
            for _ in 1..<min(strikes, 20) where wait < maximum { wait = wait * 2 }
            wait = min(wait, maximum)
            state.entries[token] = Entry(until: now + wait, strikes: strikes)
            prune(&state, now: now)
            return wait
        }
    }

    /// A 200 for `token`: its back-off is over.
    func delivered(_ token: String) {
        state.withLock { state in
            // Cheap on the hot path: most tokens were never throttled.
            if !state.entries.isEmpty { state.entries[token] = nil }
        }
    }

    /// How many tokens are remembered (for tests and gauges).
    var count: Int { state.withLock { $0.entries.count } }

    /// Forgets back-offs long over, so a burst of 429s cannot grow the table for ever. A
    /// token whose back-off ended a while ago starts again at the first strike.
    private func prune(_ state: inout State, now: ContinuousClock.Instant) {
        guard now >= state.nextPrune else { return }
        state.nextPrune = now + initial
        state.entries = state.entries.filter { $0.value.until + maximum > now }
    }
}
