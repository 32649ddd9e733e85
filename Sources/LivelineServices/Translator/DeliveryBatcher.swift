import LivelineAMQP
import ServiceLifecycle
import Synchronization

/// Collects deliveries from the consumer task and hands them out in batches: everything
/// buffered up to a maximum, after at most a short linger for stragglers.
///
/// The consumer keeps filling it while a batch is processed, so with a prefetch above the
/// batch size the next batch is ready the moment the previous one is acked. The prefetch
/// bounds what it holds.
final class DeliveryBatcher: Sendable {
    private struct State {
        var items: [AMQPDelivery] = []
        var waiter: CheckedContinuation<Void, Never>?
        var finished = false
        var error: (any Error)?
    }

    private let state = Mutex(State())

    /// Adds a delivery (consumer task).
    func append(_ delivery: AMQPDelivery) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.items.append(delivery)
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Ends the batches once the buffered deliveries are handed out.
    func finish(throwing error: (any Error)? = nil) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.finished = true
            state.error = state.error ?? error
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// The next batch, or nil once finished and empty (rethrowing the consumer's error).
    func nextBatch(maxSize: Int, linger: Duration) async throws -> [AMQPDelivery]? {
        await waitForItems()
        let short = state.withLock { !$0.finished && !$0.items.isEmpty && $0.items.count < maxSize }
        if short {
            // A cancelled sleep just ends the linger early; the batch is still taken.
            try? await Task.sleep(for: linger)
        }
        let taken = state.withLock { state -> (batch: [AMQPDelivery], error: (any Error)?) in
            let count = min(maxSize, state.items.count)
            let batch = Array(state.items.prefix(count))
            state.items.removeFirst(count)
            return (batch, state.items.isEmpty && state.finished ? state.error : nil)
        }
        if !taken.batch.isEmpty { return taken.batch }
        if let error = taken.error { throw error }
        return nil
    }

    private func waitForItems() async {
        while true {
            let ready = state.withLock { !$0.items.isEmpty || $0.finished }
            if ready { return }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if !state.items.isEmpty || state.finished { return true }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
    }
}

extension DeliveryBatcher {
    /// Fills the batcher from `consumer` in a task of `group` until the consumer ends, and
    /// cancels the consumer (`basic.cancel`) on graceful shutdown: what was received is still
    /// handed out, then the batches end.
    func fill(from consumer: AMQPConsumer, in group: inout ThrowingTaskGroup<Void, any Error>) {
        group.addTask {
            do {
                for try await delivery in consumer { self.append(delivery) }
                self.finish()
            } catch {
                self.finish(throwing: error)
            }
        }
        group.addTask {
            try? await gracefulShutdown()
            await consumer.cancel()
        }
    }
}
