import Synchronization

/// Hands deliveries from the owner thread to the one task iterating a consumer.
///
/// The iterating task takes everything buffered in one lock and then works through it
/// locally, so it wakes once per burst rather than once per message; at 100,000
/// deliveries a second, that wake-up is most of the cost. The buffer is bounded by the
/// consumer's prefetch, since the broker sends no more than that unacked.
final class DeliveryBuffer: Sendable {
    private struct State {
        var items: [AMQPDelivery] = []
        var waiter: CheckedContinuation<Void, Never>?
        var finished = false
        var error: (any Error)?
    }

    private enum Take {
        case items([AMQPDelivery])
        case finished((any Error)?)
        case wait
    }

    private let state = Mutex(State())

    /// Appends a delivery (owner thread).
    func yield(_ delivery: AMQPDelivery) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.finished else { return nil }
            state.items.append(delivery)
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Ends the sequence once the buffered deliveries are taken, optionally with an error.
    func finish(throwing error: (any Error)? = nil) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.finished else { return nil }
            state.finished = true
            state.error = error
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Everything buffered, waiting if there is nothing; `nil` at the end or on cancellation.
    func take() async throws -> [AMQPDelivery]? {
        while true {
            let taken = state.withLock { state -> Take in
                if !state.items.isEmpty {
                    defer { state.items.removeAll(keepingCapacity: true) }
                    return .items(state.items)
                }
                return state.finished ? .finished(state.error) : .wait
            }
            switch taken {
            case .items(let items): return items
            case .finished(let error):
                if let error { throw error }
                return nil
            case .wait: break
            }
            if Task.isCancelled { return nil }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let ready = state.withLock { state -> Bool in
                        if !state.items.isEmpty || state.finished || Task.isCancelled { return true }
                        state.waiter = continuation
                        return false
                    }
                    if ready { continuation.resume() }
                }
            } onCancel: {
                let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                    defer { state.waiter = nil }
                    return state.waiter
                }
                waiter?.resume()
            }
        }
    }
}
