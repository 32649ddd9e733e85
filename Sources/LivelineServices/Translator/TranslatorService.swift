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
    ///   - store: activities, tokens and budgets.
    ///   - translator: the pure translation rules and domain configuration.
    ///   - topology: queue and exchange names (declare it before running).
    ///   - settings: batching and retry settings.
    ///   - logger: logs at info and below; never full device tokens.
    ///   - metricsFactory: where the counters go; the global one by default.
    ///   - health: told when a batch is taken and when it is settled, for `/healthz`.
    ///   - channels: opens a shared activity's broadcast channel at its first event, before
    ///     any push; nil for a deployment without channel domains.
    ///   - outcomes: which domains' drops and dead letters are reported to their producers.
    public init(
        consumer: AMQPConnection, publisher: AMQPConnection, store: any ActivityStore, translator: Translator,
        topology: LivelineTopology = LivelineTopology(), settings: TranslatorSettings = TranslatorSettings(),
        logger: Logger, metricsFactory: any MetricsFactory = MetricsSystem.factory,
        health: WorkLoopHealth = WorkLoopHealth(), channels: ChannelOpener? = nil, outcomes: OutcomeDomains = .none
    ) {
        let metrics = TranslatorMetrics(factory: metricsFactory)
        self.health = health
        self.consumerConnection = consumer
        self.topology = topology
        self.settings = settings
        self.logger = logger
        self.metrics = metrics
        self.metricsFactory = metricsFactory
        self.processor = BatchProcessor(
            translator: translator, store: store, publisher: publisher, topology: topology,
            settings: settings, metrics: metrics, logger: logger, channels: channels,
            outcomes: outcomes.isEmpty ? nil : OutcomeReporter(domains: outcomes, topology: topology, stage: .translator, factory: metricsFactory))
    }

    /// Consumes the shards it holds until graceful shutdown (then drains and returns),
    /// cancellation, or the end of a shard's consumer (e.g. its queue was deleted), which it
    /// throws.
    public func run() async throws {
        let leases = ShardLeases(
            stage: topology.translate, connection: consumerConnection, prefetch: settings.prefetch,
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

    /// A pipeline over consecutive batches: batch N+3 is received and parsed (pure CPU)
    /// while batch N+2 is loaded and translated, while batch N+1's transaction runs, while
    /// batches N-1 and N wait for their publish confirms (broker work). Transactions run
    /// one after another, in batch order, and each batch submits its jobs as soon as its
    /// transaction is done, so jobs reach the broker in batch order.
    ///
    /// Batch N+2 loads while N+1's transaction may not be committed, so it is planned on
    /// N+1's decisions (``BatchPlan/CarryOver``), and the store's conditional writes still
    /// refuse anything another worker made stale. If N+1's transaction fails, N+2 is
    /// requeued with it: it was planned on state that was never stored. Overlapping the
    /// two took the transaction off the critical path: the loop had spent 97 % of its time
    /// in load, translate and apply, one after another.
    ///
    /// Up to two batches awaiting confirms beside the one being stored keep the broker fed:
    /// with one, the broker idled between batches and spent a quarter more CPU per event
    /// (measured 94 -> 75 µs, translator 8,300-8,500 -> 9,000-9,400 events/s).
    private func processBatches(from consumer: AMQPConsumer) async throws {
        try await withThrowingTaskGroup(of: Void.self) { inFlight in
            var batchesInFlight = 0
            var ahead = ParsedAhead()
            var next = receiveAndParse(from: consumer, into: ahead)
            var storing: (
                carryOver: BatchPlan.CarryOver, task: Task<(BatchProcessor.PreparedBatch, BatchProcessor.Submitted), any Error>,
                step: StoreStep
            )?
            defer { next.cancel() }

            while let (batch, parsed, started) = try await next.value {
                ahead = ParsedAhead()
                next = receiveAndParse(from: consumer, into: ahead)
                let planned: Result<BatchProcessor.PlannedBatch, any Error>
                do {
                    planned = .success(try await processor.plan(
                        parsed, after: storing?.carryOver, whileStoring: storing.map { !$0.step.isOver } ?? false))
                } catch {
                    planned = .failure(error)
                }
                if let previous = storing {
                    storing = nil
                    do {
                        _ = try await previous.task.value
                    } catch {
                        // Its own task requeued it; this batch was planned on its decisions.
                        await fail(batch, error: error)
                        continue
                    }
                }
                let plan: BatchProcessor.PlannedBatch
                switch planned {
                case .success(let success): plan = success
                case .failure(let error):
                    await fail(batch, error: error)
                    continue
                }
                if batchesInFlight == Self.maximumBatchesInFlight {
                    _ = try await inFlight.next()
                    batchesInFlight -= 1
                }
                // Whatever of the next batch is parsed by now (under a backlog, all of it).
                let nextParsed = ahead.parsed
                let step = StoreStep()
                let stored = Task { [processor] in
                    defer { step.end() }
                    let prepared = try await processor.store(plan, next: nextParsed)
                    return (prepared, try await processor.submit(prepared))
                }
                inFlight.addTask {
                    do {
                        let (prepared, submitted) = try await stored.value
                        await self.confirmAndSettle(prepared, submitted: submitted, batch: batch, started: started)
                    } catch {
                        await self.fail(batch, error: error)
                    }
                }
                batchesInFlight += 1
                storing = (plan.plan.carryOver, stored, step)
            }
            try await inFlight.waitForAll()
        }
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

    /// Takes the next batch and parses it, in a task of its own so it runs alongside the
    /// current batch; nil when the consumer has ended and everything was handed out. The
    /// parsed batch is also left in `ahead`, where the current batch can look without waiting.
    private func receiveAndParse(
        from consumer: AMQPConsumer, into ahead: ParsedAhead
    ) -> Task<(batch: [AMQPDelivery], parsed: BatchProcessor.ParsedBatch, received: ContinuousClock.Instant)?, any Error> {
        Task { [processor, settings, health] in
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
            ahead.parsed = parsed
            return (batch, parsed, received)
        }
    }

    /// Waits for a submitted batch's confirms, then acks it; on failure nacks it for redelivery.
    private func confirmAndSettle(
        _ prepared: BatchProcessor.PreparedBatch, submitted: BatchProcessor.Submitted, batch: [AMQPDelivery],
        started: ContinuousClock.Instant
    ) async {
        do {
            try await processor.confirm(prepared, submitted: submitted)
            for delivery in batch { delivery.ack() }
            health.finished(batch.count)
            metrics.batchDuration.recordNanoseconds(Self.nanoseconds(ContinuousClock.now - started))
        } catch {
            await fail(batch, error: error)
        }
    }

    private func fail(_ batch: [AMQPDelivery], error: any Error) async {
        // Once per batch, with the error only: errors from the store and the AMQP layer
        // carry no tokens or credentials.
        for delivery in batch { delivery.nack(requeue: true) }
        health.finished(batch.count)
        metrics.failedBatches.increment()
        logger.error("batch failed; requeued", metadata: ServiceLogKey.metadata([
            .translatorBatchSize: "\(batch.count)", .translatorError: "\(error)",
        ]))
        try? await Task.sleep(for: settings.failureBackoff)
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

/// The next batch once parsed, readable without waiting for it: the batch being stored
/// coalesces against whatever of it is ready (``BatchProcessor/store(_:next:)``).
private final class ParsedAhead: Sendable {
    private let box = Mutex<BatchProcessor.ParsedBatch?>(nil)

    var parsed: BatchProcessor.ParsedBatch? {
        get { box.withLock { $0 } }
        set { box.withLock { $0 = newValue } }
    }
}
