import Synchronization

/// Hands deliveries from the owner thread to the one task taking from a consumer, one at a
/// time (``AMQPConsumer``'s sequence) or in batches (``AMQPConsumer/nextBatch(maxSize:linger:)``).
///
/// The taking task takes everything buffered (up to a batch's size) in one lock and then
/// works through it locally, so it wakes once per burst rather than once per message; at
/// 100,000 deliveries a second, that wake-up is most of the cost. The buffer is bounded by
/// the consumer's prefetch, since the broker sends no more than that unacked.
final class DeliveryBuffer: Sendable {
    private struct State {
        var items: [AMQPDelivery] = []
        var waiter: CheckedContinuation<Void, Never>?
        var finished = false
        var error: (any Error)?

        mutating func take(atMost maximum: Int) -> [AMQPDelivery] {
            guard items.count > maximum else {
                defer { items.removeAll(keepingCapacity: true) }
                return items
            }
            let taken = Array(items.prefix(maximum))
            items.removeFirst(maximum)
            return taken
        }
    }

    private enum Take {
        case items([AMQPDelivery])
        case finished((any Error)?)
        case linger
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

    /// Up to `maximum` buffered deliveries, waiting while there are none. With a `linger`,
    /// a short take waits that long once for more to arrive (a cancelled linger just ends
    /// early). Nil at the end or on cancellation; the finishing error is thrown once every
    /// delivery was taken.
    func take(atMost maximum: Int = .max, linger: Duration = .zero) async throws -> [AMQPDelivery]? {
        var lingered = linger <= .zero
        while true {
            let taken = state.withLock { state -> Take in
                if !state.items.isEmpty {
                    if !lingered, !state.finished, state.items.count < maximum { return .linger }
                    return .items(state.take(atMost: maximum))
                }
                return state.finished ? .finished(state.error) : .wait
            }
            switch taken {
            case .items(let items): return items
            case .finished(let error):
                if let error { throw error }
                return nil
            case .linger:
                lingered = true
                try? await Task.sleep(for: linger)
                continue
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
