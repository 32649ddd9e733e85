import Synchronization

// Tests: Tests/LivelineServicesTests/SenderResilienceTests.swift

/// The deliveries of one shard that were received and not yet acked or nacked, so that a
/// worker giving the shard up can wait for the last ack before it lets go: the next holder
/// then starts after it, and nothing this worker already sent is sent again.
final class UnsettledDeliveries: Sendable {
    private struct State {
        var count = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// A delivery was received.
    func received() {
        state.withLock { $0.count += 1 }
    }

    /// A delivery was acked or nacked.
    func settled() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.count -= 1
            guard state.count == 0 else { return [] }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once every delivery received so far is settled.
    func allSettled() async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state in
                guard state.count > 0 else { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }
}
