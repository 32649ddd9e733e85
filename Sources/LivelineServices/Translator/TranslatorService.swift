import Foundation
import LivelineAMQP
import LivelineCore
import LivelineLogging
import LivelineMessaging
import LivelineStore
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// The translator worker (DESIGN §1, §4): consumes CloudEvents from the translate queue,
/// turns each into ActivityKit push jobs and publishes them to the push exchange, with
/// dead letters for what cannot be delivered.
///
/// Per batch: one store load, one transaction, one pipelined publish with confirms, then
/// the acks. A batch that fails (store or broker) is requeued whole and the service keeps
/// running; the queue's delivery limit dead-letters a batch that keeps failing.
///
/// It works on the translate shards it leases (``ShardLeases``), one pipeline per shard, so
/// one activity's events are translated in order by one worker at a time, however many run.
///
/// On graceful shutdown it cancels every shard's consumer, finishes and acks what it already
/// received, and returns. Run it in a `ServiceGroup`.
public struct TranslatorService: Service {
    private let consumerConnection: AMQPConnection
    private let publisherConnection: AMQPConnection
    private let balanceConnection: AMQPConnection?
    private let processor: BatchProcessor
    private let health: WorkLoopHealth
    private let topology: LivelineTopology
    private let settings: TranslatorSettings
    private let logger: Logger
    private let metrics: TranslatorMetrics
    private let metricsFactory: any MetricsFactory

    /// Creates the service; nothing runs until ``run()``.
    ///
    /// - Parameters:
    ///   - consumer: the connection to consume the translate queue on.
    ///   - publisher: a separate connection for jobs and dead letters, so a broker
    ///     resource alarm that blocks publishes never stalls the acks.
    ///   - balance: a connection that neither consumes nor publishes, where the workers are
    ///     counted for the shard balance (``ShardLeases``); nil counts on `consumer`.
    ///   - store: activities, tokens and budgets.
    ///   - translator: the pure translation rules and domain configuration.
    ///   - topology: queue and exchange names; declared when it runs, once the broker's
    ///     layout was checked against its shard counts.
    ///   - settings: batching and retry settings.
    ///   - logger: logs at info and below; never full device tokens.
    ///   - metricsFactory: where the counters go; the global one by default.
    ///   - health: told when a batch is taken and when it is settled, for `/healthz`.
    ///   - channels: opens a shared activity's broadcast channel at its first event, before
    ///     any push; nil for a deployment without channel domains.
    ///   - outcomes: which domains' drops and dead letters are reported to their producers.
    public init(
        consumer: AMQPConnection, publisher: AMQPConnection, balance: AMQPConnection? = nil, store: any ActivityStore,
        translator: Translator,
        topology: LivelineTopology = LivelineTopology(), settings: TranslatorSettings = TranslatorSettings(),
        logger: Logger, metricsFactory: any MetricsFactory = MetricsSystem.factory,
        health: WorkLoopHealth = WorkLoopHealth(), channels: ChannelOpener? = nil, outcomes: OutcomeDomains = .none
    ) {
        balanceConnection = balance
        let metrics = TranslatorMetrics(factory: metricsFactory)
        self.health = health
        self.consumerConnection = consumer
        self.publisherConnection = publisher
        self.topology = topology
        self.settings = settings
        self.logger = logger
        self.metrics = metrics
        self.metricsFactory = metricsFactory
        self.processor = BatchProcessor(
            translator: translator, store: store, publisher: publisher, topology: topology,
            settings: settings, metrics: metrics, logger: logger, channels: channels,
            outcomes: outcomes.isEmpty ? nil : OutcomeReporter(domains: outcomes, topology: topology, stage: .translator, factory: metricsFactory),
            health: health)
    }

    /// Once its connections are up, checks the broker's layout and declares the topology,
    /// then consumes the shards it holds until graceful shutdown (then drains and returns),
    /// cancellation, or the end of a shard's consumer (e.g. its queue was deleted), which it
    /// throws.
    public func run() async throws {
        guard try await brokersOpened([consumerConnection, publisherConnection, balanceConnection]) else { return }
        // Before anything is consumed: a worker that consumed a layout it does not route by
        // would break per-activity order.
        try await topology.checkShardCounts(on: publisherConnection)
        try await publisherConnection.declare(topology.amqp)
        let leases = ShardLeases(
            stage: topology.translate, connection: consumerConnection, balance: balanceConnection, prefetch: settings.prefetch,
            interval: settings.balanceInterval, logger: logger, metricsFactory: metricsFactory)
        logger.info("translator consuming", metadata: ServiceLogKey.metadata([
            .translatorQueue: "\(topology.translate.name)", .shardHeld: "of \(topology.translate.shards)",
            .translatorPrefetch: "\(settings.prefetch)", .translatorBatchMaximum: "\(settings.maxBatchSize)",
        ]))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await startLateUntilShutdown() }
            // A shard's consumer ends once cancelled and everything received was handed out;
            // its pipeline then works through what it holds and returns.
            try await leases.run { _, consumer in try await processBatches(from: consumer) }
            group.cancelAll()
        }
        logger.info("translator drained", metadata: ServiceLogKey.metadata([.translatorQueue: "\(topology.translate.name)"]))
    }

    /// Runs one shard's batches through the pipeline: ``BatchPipeline`` decides each step
    /// (receive, plan, store, confirm, ack, requeue, pause), and this does it, each step in a
    /// task of its own that reports back here when it ends. Batch N+1 is received and parsed
    /// (pure CPU) while batch N is planned, on the decisions of batch N-1 whose transaction
    /// may still run, while up to two earlier batches wait for their confirms (broker work).
    /// Overlapping them took the transaction off the critical path, and two batches awaiting
    /// confirms keep the broker from idling between batches.
    ///
    /// A consumer that ends with an error (its queue deleted, its connection lost) has handed
    /// out every delivery first: those batches are finished and settled, then the error is
    /// thrown (a lost connection's broker has requeued them already, so their acks are moot).
    private func processBatches(from consumer: AMQPConsumer) async throws {
        let (events, reports) = AsyncStream.makeStream(of: PipelineEvent.self)
        var machine = BatchPipeline(maximumInFlight: Self.maximumBatchesInFlight, failureBackoff: settings.failureBackoff)
        var batches: [BatchPipeline.BatchID: PipelineBatch] = [:]
        var lastID = 0
        var receiveError: (any Error)?
        // Discarding: a step's task is freed as it ends. A group that keeps each ended
        // child until its result is read held every step of the shard's life.
        try await withThrowingDiscardingTaskGroup { group in
            func perform(_ actions: [BatchPipeline.Action]) {
                for action in actions {
                    switch action {
                    case .receive:
                        group.addTask { [self] in
                            do {
                                reports.yield(.received(try await receiveAndParse(from: consumer)))
                            } catch {
                                reports.yield(.receiveFailed(error))
                            }
                        }
                    case .plan(let id, let after):
                        let parsed = batches[id]!.parsed!
                        let carryOver = after.flatMap { batches[$0]?.plan?.plan.carryOver }
                        let whileStoring = after.flatMap { batches[$0]?.step }.map { !$0.isOver } ?? false
                        group.addTask { [processor] in
                            do {
                                reports.yield(.planned(id, .success(
                                    try await processor.plan(parsed, after: carryOver, whileStoring: whileStoring))))
                            } catch {
                                reports.yield(.planned(id, .failure(error)))
                            }
                        }
                    case .store(let id):
                        let plan = batches[id]!.plan!
                        // Whatever of the next batch is parsed by now (under a backlog, all of it).
                        let next = batches[id + 1]?.parsed
                        let step = StoreStep()
                        batches[id]!.step = step
                        group.addTask { [processor] in
                            defer { step.end() }
                            do {
                                let prepared = try await processor.store(plan, next: next)
                                reports.yield(.stored(id, .success((prepared, try await processor.submit(prepared)))))
                            } catch {
                                reports.yield(.stored(id, .failure(error)))
                            }
                        }
                    case .confirm(let id):
                        let (prepared, submitted) = batches[id]!.stored!
                        group.addTask { [processor] in
                            do {
                                try await processor.confirm(prepared, submitted: submitted)
                                reports.yield(.confirmed(id, nil))
                            } catch {
                                reports.yield(.confirmed(id, error))
                            }
                        }
                    case .ack(let id):
                        let batch = batches.removeValue(forKey: id)!
                        for delivery in batch.deliveries { delivery.ack() }
                        health.finished(batch.deliveries.count)
                        metrics.batchDuration.recordNanoseconds(Self.nanoseconds(ContinuousClock.now - batch.received))
                    case .requeue(let id, let failure):
                        let batch = batches.removeValue(forKey: id)!
                        requeue(batch.deliveries, because: failure, error: batch.error)
                    case .pause(let until):
                        group.addTask {
                            try? await Task.sleep(until: until, clock: .continuous)
                            reports.yield(.resumed)
                        }
                    case .finish:
                        break
                    }
                }
            }

            perform(machine.start())
            for await event in events {
                let now = ContinuousClock.now
                switch event {
                case .received(let received?):
                    lastID += 1
                    batches[lastID] = PipelineBatch(deliveries: received.batch, parsed: received.parsed, received: received.received)
                    perform(machine.received(lastID, now: now))
                case .received(nil):
                    perform(machine.consumerEnded(now: now))
                case .receiveFailed(let error):
                    // The consumer's error comes after its last delivery (a deleted queue's
                    // consumer is cancelled by the broker): what was received is finished and
                    // settled first, as at a graceful end, then the error is thrown.
                    receiveError = error
                    perform(machine.consumerEnded(now: now))
                case .planned(let id, let result):
                    switch result {
                    case .success(let plan): batches[id]!.plan = plan
                    case .failure(let error): batches[id]!.error = error
                    }
                    perform(machine.planned(id, succeeded: batches[id]!.error == nil, now: now))
                case .stored(let id, let result):
                    // Its parse and plan are done with: batches awaiting confirms keep only
                    // their deliveries and what they submitted.
                    batches[id]!.parsed = nil
                    batches[id]!.plan = nil
                    switch result {
                    case .success(let stored): batches[id]!.stored = stored
                    case .failure(let error): batches[id]!.error = error
                    }
                    perform(machine.stored(id, succeeded: batches[id]!.error == nil, now: now))
                case .confirmed(let id, let error):
                    batches[id]!.error = error
                    perform(machine.confirmed(id, succeeded: error == nil, now: now))
                case .resumed:
                    perform(machine.resume(now: now))
                }
                if machine.isFinished { break }
            }
            reports.finish()
            // Only a back-off's sleep may be left.
            group.cancelAll()
        }
        if let receiveError { throw receiveError }
    }

    /// Every ``TranslatorSettings/lateStartInterval``, starts the devices that came after
    /// their live game's start, a round at a time while there are more. Every translator
    /// runs it; the store hands each device to one of them.
    private func startLateUntilShutdown() async {
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            do {
                while try await processor.startLate(limit: Self.lateStartRound, now: Date()) == Self.lateStartRound {}
            } catch {
                logger.warning("could not send late starts; they are tried again", metadata: ServiceLogKey.metadata([
                    .translatorError: "\(error)",
                ]))
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: settings.lateStartInterval) }
        }
    }

    /// Devices a late-start round claims: one publish slice's worth at most.
    private static let lateStartRound = 500

    /// One batch being stored and up to two awaiting their confirms.
    private static let maximumBatchesInFlight = 3

    /// Takes the next batch and parses it; nil when the consumer has ended and everything
    /// was handed out.
    private func receiveAndParse(
        from consumer: AMQPConsumer
    ) async throws -> (batch: [AMQPDelivery], parsed: BatchProcessor.ParsedBatch, received: ContinuousClock.Instant)? {
        guard let batch = try await consumer.nextBatch(
            maxSize: settings.maxBatchSize, linger: settings.linger, quiet: settings.lingerQuiet) else {
            return nil
        }
        health.began(batch.count)
        let received = ContinuousClock.now
        let parsed = await processor.parse(batch.map {
            .init(
                body: $0.body, redelivered: $0.redelivered,
                priorityCap: $0.properties.headers[TranslatorHeaders.priorityCap]?.intValue
                    .flatMap { PushPriority(rawValue: Int($0)) })
        })
        return (batch, parsed, received)
    }

    /// Nacks a batch for redelivery, once per batch, with the error only: errors from the
    /// store and the AMQP layer carry no tokens or credentials.
    private func requeue(_ deliveries: [AMQPDelivery], because failure: BatchPipeline.Failure, error: (any Error)?) {
        for delivery in deliveries { delivery.nack(requeue: true) }
        health.finished(deliveries.count)
        metrics.failedBatches.increment()
        let cause = switch failure {
        case .plan: "plan"
        case .store: "transaction or submit"
        case .confirm: "publish confirm"
        case .plannedOnFailedBatch: "the transaction of the batch it was planned on failed"
        }
        logger.error("batch failed; requeued", metadata: ServiceLogKey.metadata([
            .translatorBatchSize: "\(deliveries.count)", .translatorError: "\(cause)\(error.map { ": \($0)" } ?? "")",
        ]))
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
    }
}

/// One batch's store and submit, over once they end (failed or not): the next batch's load
/// then meets no write of this pipeline, which on a trickle is the rule
/// (``BatchProcessor/plan(_:after:whileStoring:)``).
private final class StoreStep: Sendable {
    private let over = Atomic<Bool>(false)

    var isOver: Bool { over.load(ordering: .acquiring) }

    func end() { over.store(true, ordering: .releasing) }
}

/// What the pipeline keeps of one batch from its receipt until it is acked or requeued.
private struct PipelineBatch {
    let deliveries: [AMQPDelivery]
    var parsed: BatchProcessor.ParsedBatch?
    let received: ContinuousClock.Instant
    var plan: BatchProcessor.PlannedBatch?
    var step: StoreStep?
    var stored: (BatchProcessor.PreparedBatch, BatchProcessor.Submitted)?
    /// Why it failed, for the log line of its requeue.
    var error: (any Error)?
}

/// A step's end, reported to the pipeline's loop by the task that did it.
private enum PipelineEvent: Sendable {
    case received((batch: [AMQPDelivery], parsed: BatchProcessor.ParsedBatch, received: ContinuousClock.Instant)?)
    case receiveFailed(any Error)
    case planned(BatchPipeline.BatchID, Result<BatchProcessor.PlannedBatch, any Error>)
    case stored(BatchPipeline.BatchID, Result<(BatchProcessor.PreparedBatch, BatchProcessor.Submitted), any Error>)
    /// With the error when the confirms failed.
    case confirmed(BatchPipeline.BatchID, (any Error)?)
    case resumed
}
