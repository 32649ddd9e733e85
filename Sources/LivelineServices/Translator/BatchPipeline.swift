/// The translator's batch pipeline, with no I/O: when each batch is received, planned, stored
/// (its transaction and the submit of its messages), confirmed, and then acked or requeued.
///
/// The driver (``TranslatorService``) reports what happened and does the work each returned
/// ``Action`` asks for; the machine decides what that work is. Time comes in as instants, so a
/// test drives the back-off after a failure with instants of its own and no broker or store.
///
/// The overlap it keeps: batch N+1 is received and parsed while batch N is planned, and
/// planned while N-1's transaction runs, on N-1's decisions (``BatchPlan/CarryOver``), while
/// up to two earlier batches wait for their confirms. So:
/// - One transaction at a time, in batch order, and each batch submits its messages as its
///   transaction ends: jobs reach the broker in batch order.
/// - A batch planned on one whose store failed is requeued with it: it was planned on state
///   that was never stored.
/// - Confirms may come back in any order; each batch is acked on its own.
/// - After any failure nothing new is planned or stored for ``failureBackoff``, so a store or
///   broker outage does not spin the queue's redeliveries.
/// - When the consumer ends (shutdown, a shard handed over), everything received is finished
///   and settled before ``Action/finish``.
struct BatchPipeline {
    typealias Instant = ContinuousClock.Instant
    /// A batch's number, in the order the consumer handed the batches out.
    typealias BatchID = Int

    enum Action: Equatable {
        /// Take the next batch from the consumer and parse it; report ``received(_:now:)``, or
        /// ``consumerEnded(now:)`` once the consumer has nothing more.
        case receive
        /// Load what the batch touches and translate it, on the decisions of `after` (the
        /// batch whose transaction may still run; nil: none); report ``planned(_:succeeded:now:)``.
        case plan(BatchID, after: BatchID?)
        /// Run the batch's transaction and submit its messages; report ``stored(_:succeeded:now:)``.
        case store(BatchID)
        /// Wait for the broker's confirms of what the batch submitted; report
        /// ``confirmed(_:succeeded:now:)``.
        case confirm(BatchID)
        /// Ack the batch's deliveries: it is done.
        case ack(BatchID)
        /// Nack the batch's deliveries for redelivery.
        case requeue(BatchID, Failure)
        /// Report ``resume(now:)`` at this instant: nothing new starts before it.
        case pause(until: Instant)
        /// The consumer ended and every batch it handed out is settled.
        case finish
    }

    /// Why a batch was requeued.
    enum Failure: Equatable {
        case plan, store, confirm
        /// The batch it was planned on failed its store.
        case plannedOnFailedBatch
    }

    /// Batches storing or awaiting their confirms at once: one storing and two confirming
    /// keep the broker fed (with one, it idled between batches).
    let maximumInFlight: Int
    let failureBackoff: Duration

    private var receiving = false
    private var ended = false
    private var finished = false
    /// Received and parsed, not yet planned.
    private(set) var waiting: BatchID?
    private var planning: (id: BatchID, after: BatchID?)?
    /// Planned, held until the batch it was planned on has stored and a place is free.
    private var planned: (id: BatchID, after: BatchID?, succeeded: Bool)?
    private var storing: BatchID?
    private var confirming: Set<BatchID> = []
    /// The last batch whose store failed.
    private var failedStore: BatchID?
    private var pausedUntil: Instant?

    init(maximumInFlight: Int = 3, failureBackoff: Duration) {
        precondition(maximumInFlight >= 1)
        self.maximumInFlight = maximumInFlight
        self.failureBackoff = failureBackoff
    }

    /// Whether the pipeline has finished.
    var isFinished: Bool { finished }

    mutating func start() -> [Action] {
        precondition(!receiving && !ended, "started twice")
        receiving = true
        return [.receive]
    }

    mutating func received(_ id: BatchID, now: Instant) -> [Action] {
        precondition(receiving && waiting == nil, "batch \(id) received without a receive")
        receiving = false
        waiting = id
        return advance(now: now)
    }

    mutating func consumerEnded(now: Instant) -> [Action] {
        receiving = false
        ended = true
        return advance(now: now)
    }

    mutating func planned(_ id: BatchID, succeeded: Bool, now: Instant) -> [Action] {
        guard let current = planning, current.id == id else { preconditionFailure("batch \(id) was not being planned") }
        planning = nil
        planned = (id, current.after, succeeded)
        return advance(now: now)
    }

    mutating func stored(_ id: BatchID, succeeded: Bool, now: Instant) -> [Action] {
        precondition(storing == id, "batch \(id) was not storing")
        storing = nil
        if succeeded {
            confirming.insert(id)
            return [.confirm(id)] + advance(now: now)
        }
        failedStore = id
        return [.requeue(id, .store)] + pause(now) + advance(now: now)
    }

    mutating func confirmed(_ id: BatchID, succeeded: Bool, now: Instant) -> [Action] {
        precondition(confirming.remove(id) != nil, "batch \(id) was not awaiting confirms")
        if succeeded { return [.ack(id)] + advance(now: now) }
        return [.requeue(id, .confirm)] + pause(now) + advance(now: now)
    }

    /// The instant a ``Action/pause(until:)`` named has come (or another: one that is early
    /// changes nothing).
    mutating func resume(now: Instant) -> [Action] {
        if let until = pausedUntil, now >= until { pausedUntil = nil }
        return advance(now: now)
    }

    private mutating func pause(_ now: Instant) -> [Action] {
        let until = now.advanced(by: failureBackoff)
        if let current = pausedUntil, current >= until { return [] }
        pausedUntil = until
        return [.pause(until: until)]
    }

    /// Moves every batch as far as it may go.
    private mutating func advance(now: Instant) -> [Action] {
        var actions: [Action] = []
        // The planned batch, once the batch it was planned on has stored.
        if let batch = planned, batch.after == nil || batch.after != storing {
            if let after = batch.after, after == failedStore {
                planned = nil
                actions += [.requeue(batch.id, .plannedOnFailedBatch)] + pause(now)
            } else if !batch.succeeded {
                planned = nil
                actions += [.requeue(batch.id, .plan)] + pause(now)
            } else if pausedUntil == nil, storing == nil, confirming.count < maximumInFlight {
                planned = nil
                storing = batch.id
                actions.append(.store(batch.id))
            }
        }
        // The next batch, once the one before it is storing; and the one after it is received.
        if pausedUntil == nil, planning == nil, planned == nil, let next = waiting {
            waiting = nil
            planning = (next, storing)
            actions.append(.plan(next, after: storing))
            if !ended && !receiving {
                receiving = true
                actions.append(.receive)
            }
        }
        if ended, !finished, !receiving, waiting == nil, planning == nil, planned == nil, storing == nil, confirming.isEmpty {
            finished = true
            actions.append(.finish)
        }
        return actions
    }
}
