import DequeModule
import Synchronization

// Tests: Tests/LivelineAMQPTests/ConsumerBatchTests.swift

/// Hands deliveries from the owner thread to the one task taking from a consumer, one at a
/// time (``AMQPConsumer``'s sequence) or in batches (``AMQPConsumer/nextBatch(maxSize:linger:quiet:)``).
///
/// The taking task takes everything buffered (up to a batch's size) in one lock and then
/// works through it locally, so it wakes once per burst rather than once per message; at
/// 100,000 deliveries a second, that wake-up is most of the cost. The buffer is bounded by
/// the consumer's prefetch, since the broker sends no more than that unacked.
///
/// A batch's linger is timed by the owner thread, which calls ``tick(now:)`` on every turn of
/// its loop and sleeps no longer than ``lingerWait``'s deadline. Timed by the taking task,
/// with a sleep per quiet step, the linger cost a timer, the dispatch thread that fires it
/// and a wake-up of the task per step: about two fifths of the translator's thread switches
/// at a steady 1,000 events/s.
///
/// The owner thread wakes for each delivery, except while a take lingers on a trickle: when
/// the last linger ran to its end with deliveries arriving all through it and its batch still
/// short, arrivals are too slow to fill a batch, and the owner leaves the socket unread until
/// the next linger ends. At a steady 1,000 events/s that is one wake-up a batch instead of
/// one a delivery (the translator's consuming thread took a quarter of its CPU, most of it
/// in switching). The price: a trickle that stops holds its last batch for the whole linger,
/// not one quiet step.
final class DeliveryBuffer: Sendable {
    private struct State {
        /// A deque, not an array: a batch taken from the front of a deep buffer (a drain with
        /// small batches: ten from 1,500 prefetched) moved every delivery behind it, 440,000
        /// instructions a batch of ten, more than the batch's translation.
        var items = Deque<AMQPDelivery>()
        /// Deliveries appended so far, to tell whether any came during a linger's step.
        var arrived = 0
        /// Whether the last linger ran to its end, deliveries arriving through it, and its
        /// batch was still short.
        var trickle = false
        var waiter: CheckedContinuation<Void, Never>?
        /// What the waiting take lingers for; nil while it waits for a first delivery.
        var linger: Linger?
        var finished = false
        var error: (any Error)?

        mutating func take(atMost maximum: Int) -> [AMQPDelivery] {
            // Moved out one by one: copying the prefix, then removing it, retained and released
            // every reference in each delivery (the sender takes all, a few hundred at a time).
            var taken: [AMQPDelivery] = []
            taken.reserveCapacity(min(maximum, items.count))
            while taken.count < maximum, let delivery = items.popFirst() { taken.append(consume delivery) }
            return taken
        }

        /// The waiter to resume, taken out of the state, when its wait is over. Without `now`,
        /// only what a delivery changes counts (a first delivery, a full batch): the owner
        /// thread's tick ends a linger by the clock.
        mutating func waiterDone(now: ContinuousClock.Instant?) -> CheckedContinuation<Void, Never>? {
            guard let waiter else { return nil }
            if var linger {
                guard linger.isOver(buffered: items.count, arrived: arrived, now: now) else {
                    self.linger = linger
                    return nil
                }
                trickle = linger.wasTrickle(buffered: items.count, arrived: arrived, now: now)
            } else if items.isEmpty {
                return nil
            }
            self.waiter = nil
            self.linger = nil
            return waiter
        }

        mutating func takeWaiter() -> CheckedContinuation<Void, Never>? {
            defer { waiter = nil; linger = nil }
            return waiter
        }
    }

    /// A short batch waiting for more, in steps of `quiet`: until it is full, `until` has
    /// come, or a step ended in which nothing arrived. The steps start with the take, not at
    /// the last delivery: when the prefetch window is full, nothing arrives until the batches
    /// before are acked, and ending the linger at the first such gap made batches smaller
    /// (up to a tenth more CPU per event at full speed, the broker's too).
    private struct Linger {
        var maximum: Int
        var until: ContinuousClock.Instant
        var quiet: Duration
        var stepEnd: ContinuousClock.Instant
        /// Deliveries appended before the current step began.
        var seen: Int
        /// Deliveries appended before the take began.
        let began: Int

        init(maximum: Int, linger: Duration, quiet: Duration, now: ContinuousClock.Instant, arrived: Int) {
            self.maximum = maximum
            self.until = now + linger
            self.quiet = quiet
            self.stepEnd = min(until, now + quiet)
            self.seen = arrived
            self.began = arrived
        }

        /// Whether the wait, now over, ran to `until` with deliveries arriving and the batch short.
        func wasTrickle(buffered: Int, arrived: Int, now: ContinuousClock.Instant?) -> Bool {
            guard let now, buffered < maximum else { return false }
            return now >= until && arrived != began
        }

        /// Whether the wait is over; otherwise a step that saw deliveries is followed by another.
        mutating func isOver(buffered: Int, arrived: Int, now: ContinuousClock.Instant?) -> Bool {
            if buffered >= maximum { return true }
            guard let now else { return false }
            if now >= until { return true }
            guard now >= stepEnd else { return false }
            if arrived == seen { return true }
            seen = arrived
            stepEnd = min(until, now + quiet)
            return false
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
            return state.waiterDone(now: nil)
        }
        waiter?.resume()
    }

    /// Ends a linger that is over (owner thread, every turn of its loop).
    func tick(now: ContinuousClock.Instant) {
        let waiter = state.withLock { state in state.linger == nil ? nil : state.waiterDone(now: now) }
        waiter?.resume()
    }

    /// What a lingering take needs of the owner thread, which sleeps no longer than `deadline`:
    /// the end of the current step, when more deliveries would extend the wait; or, on a
    /// trickle (`readsMayWait`), the end of the linger, with the socket left unread until then.
    struct LingerWait: Equatable {
        var deadline: ContinuousClock.Instant
        var readsMayWait: Bool
    }

    /// Nil when no take lingers.
    var lingerWait: LingerWait? {
        state.withLock { state in
            guard state.waiter != nil, let linger = state.linger else { return nil }
            return state.trickle
                ? LingerWait(deadline: linger.until, readsMayWait: true)
                : LingerWait(deadline: linger.stepEnd, readsMayWait: false)
        }
    }

    /// Ends the sequence once the buffered deliveries are taken, optionally with an error.
    func finish(throwing error: (any Error)? = nil) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.finished else { return nil }
            state.finished = true
            state.error = error
            return state.takeWaiter()
        }
        waiter?.resume()
    }

    /// Up to `maximum` buffered deliveries, waiting while there are none.
    ///
    /// With a `linger`, a short take waits for more while they keep coming: in steps of
    /// `quiet` (at most the linger), until a step in which none arrived, the batch is full, or
    /// `linger` has passed since the take. A burst that arrived whole waits one step; a steady
    /// trickle fills the batch for the whole linger. The owner thread ends the wait
    /// (``tick(now:)``). A cancelled linger just ends early. Nil at the end or on
    /// cancellation; the finishing error is thrown once every delivery was taken.
    func take(atMost maximum: Int = .max, linger: Duration = .zero, quiet: Duration? = nil) async throws -> [AMQPDelivery]? {
        var lingered = false
        while true {
            let taken = state.withLock { state -> Take in
                if !state.items.isEmpty {
                    guard !lingered, linger > .zero, !state.finished, state.items.count < maximum, !Task.isCancelled else {
                        return .items(state.take(atMost: maximum))
                    }
                    return .linger(arrived: state.arrived)
                }
                return state.finished ? .finished(state.error) : .wait
            }
            var lingering: Linger?
            switch taken {
            case .items(let items): return items
            case .finished(let error):
                if let error { throw error }
                return nil
            case .linger(let arrived):
                lingering = Linger(
                    maximum: maximum, linger: linger, quiet: min(quiet ?? linger, linger), now: .now, arrived: arrived)
                lingered = true
            case .wait: break
            }
            if Task.isCancelled { return nil }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let ready = state.withLock { state -> Bool in
                        if state.finished || Task.isCancelled { return true }
                        state.waiter = continuation
                        state.linger = lingering
                        // Already over (full by now): no wait.
                        return state.waiterDone(now: .now) != nil
                    }
                    if ready { continuation.resume() }
                }
            } onCancel: {
                state.withLock { $0.takeWaiter() }?.resume()
            }
        }
    }
}
