import Synchronization

/// Hands deliveries from the owner thread to the one task taking from a consumer, one at a
/// time (``AMQPConsumer``'s sequence) or in batches (``AMQPConsumer/nextBatch(maxSize:linger:quiet:)``).
///
/// The taking task takes everything buffered (up to a batch's size) in one lock and then
/// works through it locally, so it wakes once per burst rather than once per message; at
/// 100,000 deliveries a second, that wake-up is most of the cost. The buffer is bounded by
/// the consumer's prefetch, since the broker sends no more than that unacked.
final class DeliveryBuffer: Sendable {
    private struct State {
        var items: [AMQPDelivery] = []
        /// Deliveries appended so far, to tell whether any came during a linger's step.
        var arrived = 0
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
        case linger(arrived: Int)
        case wait
    }

    private let state = Mutex(State())

    /// Appends a delivery (owner thread).
    func yield(_ delivery: AMQPDelivery) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.finished else { return nil }
            state.items.append(delivery)
            state.arrived &+= 1
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

    /// Up to `maximum` buffered deliveries, waiting while there are none.
    ///
    /// With a `linger`, a short take waits for more while they keep coming: in steps of
    /// `quiet` (at most the linger), until a step in which none arrived, the batch is full,
    /// or `linger` has passed since the first step. A burst that arrived whole waits one
    /// step; a steady trickle fills the batch for the whole linger. A cancelled linger just
    /// ends early. Nil at the end or on cancellation; the finishing error is thrown once
    /// every delivery was taken.
    func take(atMost maximum: Int = .max, linger: Duration = .zero, quiet: Duration? = nil) async throws -> [AMQPDelivery]? {
        let step = min(quiet ?? linger, linger)
        var lingering: (until: ContinuousClock.Instant, seen: Int)?
        while true {
            let taken = state.withLock { state -> Take in
                if !state.items.isEmpty {
                    guard linger > .zero, !state.finished, state.items.count < maximum, !Task.isCancelled else {
                        return .items(state.take(atMost: maximum))
                    }
                    if let lingering, lingering.seen == state.arrived || ContinuousClock.now >= lingering.until {
                        return .items(state.take(atMost: maximum))
                    }
                    return .linger(arrived: state.arrived)
                }
                return state.finished ? .finished(state.error) : .wait
            }
            switch taken {
            case .items(let items): return items
            case .finished(let error):
                if let error { throw error }
                return nil
            case .linger(let arrived):
                let now = ContinuousClock.now
                let until = lingering?.until ?? now + linger
                lingering = (until, arrived)
                try? await Task.sleep(for: min(step, until - now))
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
