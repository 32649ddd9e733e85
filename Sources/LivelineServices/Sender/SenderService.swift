import Foundation
import LivelineAMQP
import LivelineAPNs
import LivelineCore
import LivelineLogging
import LivelineMessaging
import Logging
import Metrics
import ServiceLifecycle

// Tests: Tests/LivelineServicesTests/SenderDeliveryTests.swift, Tests/LivelineServicesTests/SenderResilienceTests.swift, Tests/LivelineRuntimeTests/MultiAppSenderTests.swift

/// The sender: consumes push jobs from the send queue and delivers them to APNs, one
/// ``APNsClient`` per app, recording every outcome before acking (DESIGN §5, §6).
///
/// ```swift
/// let sender = SenderService(
///     consuming: consumeConnection, publishing: publishConnection,
///     clients: APNsClientDirectory([ridesClient, scoresClient]),
///     store: store, settings: SenderSettings()
/// )
/// let group = ServiceGroup(services: [sender], gracefulShutdownSignals: [.sigterm], logger: logger)
/// try await group.run()
/// ```
///
/// On graceful shutdown it stops consuming (`basic.cancel`), finishes the sends in
/// flight, records their outcomes, acks them and returns; deliveries still prefetched
/// but not started are requeued by the broker when the caller closes the connection.
/// The caller owns the connections, clients and store, opens the connections (it waits for
/// them) and closes them after `run()`.
public final class SenderService: Service {
    private let consuming: AMQPConnection
    private let publishing: AMQPConnection
    private let balance: AMQPConnection?
    private let settings: SenderSettings
    private let handler: PushJobHandler
    private let traces: TraceWriter
    private let logger: Logger
    private let health: WorkLoopHealth
    private let metricsFactory: any MetricsFactory
    /// Every shard's lanes share it: a shard handed back, or consumed again after a
    /// reconnect, still knows what went out.
    private let newestSent = NewestSent()

    /// Creates a sender. Opens nothing: consuming starts in ``run()``.
    ///
    /// - Parameters:
    ///   - consuming: the connection the send queue is consumed on.
    ///   - publishing: a separate connection for retries and dead letters (confirms on a
    ///     consuming connection would wait behind deliveries).
    ///   - balance: a connection that neither consumes nor publishes, where the workers are
    ///     counted for the shard balance (``ShardLeases``); nil counts on `consuming`.
    ///   - clients: the APNs client of every app served.
    ///   - store: tokens, activities, channels and traces.
    ///   - settings: queue names, prefetch, concurrency, back-off and trace batching.
    ///   - logger: never receives a full device token or a secret.
    ///   - health: told when a job is taken and when its send is done, for `/healthz`.
    public init(
        consuming: AMQPConnection,
        publishing: AMQPConnection,
        balance: AMQPConnection? = nil,
        clients: APNsClientDirectory,
        store: any SenderStore,
        settings: SenderSettings = SenderSettings(),
        logger: Logger = Logger(label: "liveline.sender"),
        metricsFactory: any MetricsFactory = MetricsSystem.factory,
        health: WorkLoopHealth = WorkLoopHealth()
    ) {
        self.health = health
        self.metricsFactory = metricsFactory
        let metrics = SenderMetrics(factory: metricsFactory)
        let outcomes = settings.outcomes.isEmpty
            ? nil : OutcomeReporter(domains: settings.outcomes, topology: settings.topology, stage: .sender, factory: metricsFactory)
        let traces = TraceWriter(
            store: store, interval: settings.traceFlushInterval, batchSize: settings.traceBatchSize,
            metrics: metrics, logger: logger, outcomes: outcomes.map { ($0, publishing) }
        )
        self.consuming = consuming
        self.publishing = publishing
        self.balance = balance
        self.settings = settings
        self.traces = traces
        self.logger = logger
        self.handler = PushJobHandler(
            clients: clients,
            store: store,
            publisher: OutcomePublisher(connection: publishing, topology: settings.topology),
            traces: traces,
            backoff: TokenBackoff(initial: settings.throttleBackoff, maximum: settings.maximumThrottleBackoff),
            channels: ChannelKeeper(store: store, logger: logger),
            metrics: metrics,
            tiers: settings.topology.retryTiers,
            logger: logger,
            outcomes: outcomes
        )
    }

    /// Once its connections are up, checks the broker's layout and declares the topology,
    /// consumes the send shards it leases (``ShardLeases``) until graceful shutdown or
    /// cancellation, then drains: every job taken from a shard is finished, recorded and
    /// acked before this returns, and before a shard handed to another worker is let go.
    public func run() async throws {
        guard try await brokersOpened([consuming, publishing, balance]) else { return }
        // Before anything is consumed, as the translator does.
        try await settings.topology.checkShardCounts(on: publishing)
        try await publishing.declare(settings.topology.amqp)
        try await consuming.declare(settings.topology.amqp)
        let stage = settings.topology.send
        let leases = ShardLeases(
            stage: stage, connection: consuming, balance: balance, prefetch: settings.prefetch, interval: settings.balanceInterval,
            logger: logger, metricsFactory: metricsFactory)
        logger.info(
            "sender consuming",
            metadata: ServiceLogKey.metadata([
                .senderQueue: "\(stage.name)", .shardHeld: "of \(stage.shards)",
                .senderPrefetch: "\(settings.prefetch)",
                .senderInFlight: "\(settings.maximumSendsInFlight)",
            ])
        )
        try await withThrowingTaskGroup(of: Void.self) { background in
            background.addTask { await self.traces.run() }
            // A shard's consumer ends once cancelled (a handover, graceful shutdown or
            // cancellation) and everything received was handed out; its sends then finish.
            var failure: (any Error)?
            do {
                try await leases.run { _, consumer in await self.sendAll(from: consumer) }
            } catch {
                failure = error
            }
            // Says how far a drain got, should it overrun its timeout.
            logger.info("sender let go of every shard; committing its last traces")
            // Every handler has left its trace entries and its ack with the writer; the
            // ticker's last flush commits them and acks before run() returns.
            traces.finish()
            try await background.waitForAll()
            if let failure { throw failure }
        }
        logger.info("sender drained")
    }

    /// Runs one handler per job (a delivery carries one, or a bundle of them), at most
    /// `maximumSendsInFlight` at once for each shard held, and waits for all of them, and
    /// their acks, once the consumer ends.
    private func sendAll(from consumer: AMQPConsumer) async {
        let handler = self.handler
        let health = self.health
        let limit = settings.maximumSendsInFlight
        let lanes = ActivityLanes(newest: newestSent)
        let unsettled = UnsettledDeliveries()
        await withTaskGroup(of: Void.self) { group in
            var inFlight = 0
            do {
                for try await delivery in consumer {
                    let jobs = IncomingJob.jobs(in: delivery)
                    let settlement = DeliverySettlement(delivery, jobs: jobs.count, unsettled: unsettled)
                    for incoming in jobs {
                        if inFlight >= limit {
                            _ = await group.next()
                            inFlight -= 1
                        }
                        inFlight += 1
                        // One target's jobs of an activity go out in queue order; others run beside them.
                        let ticket = lanes.enter(activity: incoming.lane)
                        health.began()
                        group.addTask {
                            // Decoded before the job waits for its turn, so the jobs ahead of it
                            // in the lane can see that it supersedes them.
                            let job = incoming.decoded ?? Result { try PushJob(json: incoming.body) }
                            let decoded = try? job.get()
                            if let decoded { lanes.note(ticket, job: decoded) }
                            await lanes.run(ticket, job: decoded, replayed: incoming.replayed) { overtaken in
                                await handler.handle(incoming, job: job, settlement: settlement, overtaken: overtaken)
                            }
                            health.finished()
                        }
                    }
                }
            } catch {
                // The broker cancelled the consumer (queue deleted) or the connection was
                // closed under us: finish what is in flight, then report it.
                logger.error("send queue consumer ended", metadata: ServiceLogKey.metadata([.senderError: "\(error)"]))
            }
            await group.waitForAll()
        }
        // Acks follow their trace's commit: commit what waits, then wait for every ack, so
        // a shard given up is let go only after its last one.
        await traces.flush()
        await unsettled.allSettled()
    }
}
