import LivelineAMQP
import LivelineMessaging
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

// Tests: Tests/LivelineServicesTests/ShardLeasesTests.swift, Tests/LivelineServicesTests/ShardedTranslatorTests.swift

/// Holds one worker's fair share of a stage's shards and runs the work of each shard it holds.
///
/// **Why leases on the broker.** RabbitMQ 3.10 makes the first consumer of a
/// single-active-consumer queue its active one and never moves it, so a worker that
/// subscribed to every shard would keep them all. Instead a worker subscribes only to the
/// shards it leases. A lease is an exclusive queue (``LivelineTopology/Stage/lease(_:)``)
/// declared on the worker's consumer connection: only one connection can hold it, and the
/// broker frees it the moment that connection dies. So a lease never outlives the consumer
/// it guards, no clock is compared, and the store is not involved. The shard queues keep
/// `x-single-active-consumer`, so even two workers that both believed they held a shard
/// could not take its messages at once.
///
/// **Order across a handover.** A worker gives up a shard by cancelling its consumer,
/// finishing and acking every message it had received, and only then dropping the lease.
/// The next holder subscribes after it claimed the lease, so it starts at the first message
/// the last holder did not ack. A worker that dies leaves its unacked messages to the broker,
/// which hands them to the next holder first: those, and only those, may be sent twice.
///
/// **Balance.** Every `interval`, the worker counts the live workers and the hungry ones on
/// the broker and takes one ``ShardShare`` step.
final class ShardLeases: Sendable {
    /// One shard's work: consume `consumer` until it ends (it ends after a `basic.cancel` once
    /// every received message was handed out), finishing and settling each message.
    typealias Work = @Sendable (_ shard: Int, _ consumer: AMQPConsumer) async throws -> Void

    private let stage: LivelineTopology.Stage
    private let connection: AMQPConnection
    private let balance: AMQPConnection
    private let prefetch: UInt16
    private let interval: Duration
    private let logger: Logger
    private let heldGauge: Gauge
    private let handovers: Counter
    private let state = Mutex(State())

    private struct State {
        var held: [Int: Holding] = [:]
    }

    /// A shard held: its consumer, its work, and how the work ended once it has.
    private final class Holding: Sendable {
        let consumer: AMQPConsumer
        let ending = Mutex<Result<Void, any Error>?>(nil)
        private(set) nonisolated(unsafe) var task: Task<Void, any Error>?

        init(consumer: AMQPConsumer) {
            self.consumer = consumer
        }

        func start(_ shard: Int, _ work: @escaping Work) {
            task = Task { [self] in
                let result: Result<Void, any Error>
                do {
                    result = .success(try await work(shard, consumer))
                } catch {
                    result = .failure(error)
                }
                self.ending.withLock { $0 = result }
                try result.get()
            }
        }

        var ended: Result<Void, any Error>? { ending.withLock { $0 } }

        /// Waits for the work to end; the error it ended with, if any.
        func finished() async -> (any Error)? {
            guard let task else { return nil }
            if case .failure(let error) = await task.result { return error }
            return nil
        }
    }

    /// - Parameters:
    ///   - connection: where the shards are leased and consumed.
    ///   - balance: where the workers are counted each `interval`: best a connection that
    ///     consumes nothing. A count is a `queue.declare` round trip, and while rabbitmq-c waits
    ///     for its reply it reads every delivery ahead of it off the socket, past the bound
    ///     (`maximumHeldBytes`) that keeps a busy consumer's memory flat.
    init(
        stage: LivelineTopology.Stage, connection: AMQPConnection, balance: AMQPConnection? = nil, prefetch: UInt16,
        interval: Duration = .seconds(1), logger: Logger, metricsFactory: any MetricsFactory
    ) {
        self.stage = stage
        self.connection = connection
        self.balance = balance ?? connection
        self.prefetch = prefetch
        self.interval = interval
        self.logger = logger
        heldGauge = Gauge(label: "liveline_shards_held", dimensions: [("stage", stage.name)], factory: metricsFactory)
        handovers = Counter(label: "liveline_shard_handovers_total", dimensions: [("stage", stage.name)], factory: metricsFactory)
    }

    /// The shards held now, in index order.
    var held: [Int] { state.withLock { $0.held.keys.sorted() } }

    /// Claims and releases shards until graceful shutdown or cancellation, running `work` for
    /// each shard held; then stops every shard's work (each drains) and returns. Throws what a
    /// shard's work threw, after stopping the others.
    func run(_ work: @escaping Work) async throws {
        guard try await untilResharded() else { return }
        let presence = try await connection.consume(queue: stage.workersQueue, prefetch: 1)
        var hunger: AMQPConsumer?
        var reconnects = connection.reconnectCount
        var failure: (any Error)?
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            do {
                try reap()
                if connection.reconnectCount != reconnects {
                    reconnects = connection.reconnectCount
                    try await reclaimAfterReconnect()
                }
                let share = ShardShare(
                    shards: stage.shards, workers: try await balance.consumerCount(queue: stage.workersQueue))
                let hungry = try await balance.consumerCount(queue: stage.hungryQueue)
                switch share.step(holding: held.count, hungry: hungry) {
                case .release(let count):
                    for shard in held.suffix(count) { await release(shard) }
                case .claim(let count):
                    try await claim(count, work: work)
                case .hold:
                    break
                }
                // Hungry only when there was nothing free to claim.
                switch (share.isHungry(holding: held.count), hunger) {
                case (true, nil): hunger = try await connection.consume(queue: stage.hungryQueue, prefetch: 1)
                case (false, let subscribed?):
                    await subscribed.close()
                    hunger = nil
                default: break
                }
            } catch let error as ShardWorkFailed {
                failure = error.error
                break
            } catch {
                // The broker is away: the connection reconnects by itself, and the shards held
                // go on (their consumers resume); the next tick looks again.
                logger.warning("shard balance skipped", metadata: ServiceLogKey.metadata([
                    .shardStage: "\(stage.name)", .shardError: "\(error)",
                ]))
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.interval) }
        }
        for shard in held { await release(shard) }
        await hunger?.close()
        await presence.close()
        if let failure { throw failure }
    }

    /// While the stage is being resharded, the shards of the old count still hold messages,
    /// and their workers events, that must be handled first: the worker waits until `liveline
    /// reshard` has drained and deleted them and their workers have let go of them, which it
    /// marks by deleting its marker. False when shut down meanwhile.
    private func untilResharded() async throws -> Bool {
        var logged = false
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            guard try await LivelineTopology.exists(queue: stage.reshardingMarker, on: connection) else { return true }
            if !logged {
                let others = try await LivelineTopology.shardCounts(of: stage.name, on: connection).filter { $0 != stage.shards }
                logger.info("waiting for `liveline reshard` to finish: the stage's other shards drain first", metadata: ServiceLogKey.metadata([
                    .shardStage: "\(stage.name)",
                    .shardHeld: "of \(stage.shards), draining \(others.map(String.init).joined(separator: ", "))",
                ]))
                logged = true
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.interval) }
        }
        return false
    }

    /// Claims up to `count` free shards, trying them in a random order so that workers
    /// starting together do not all contend for shard 0.
    private func claim(_ count: Int, work: @escaping Work) async throws {
        var claimed = 0
        let held = Set(self.held)
        for shard in (0..<stage.shards).shuffled() where claimed < count && !held.contains(shard) {
            guard try await connection.claim(exclusiveQueue: stage.lease(shard)) else { continue }
            let consumer: AMQPConsumer
            do {
                consumer = try await connection.consume(queue: stage.queue(shard), prefetch: prefetch)
            } catch {
                try? await connection.delete(queue: stage.lease(shard))
                throw error
            }
            let holding = Holding(consumer: consumer)
            holding.start(shard, work)
            state.withLock { $0.held[shard] = holding }
            claimed += 1
            logger.info("shard taken", metadata: ServiceLogKey.metadata([
                .shardStage: "\(stage.name)", .shardIndex: "\(shard)", .shardHeld: "\(self.held.count)",
            ]))
        }
        heldGauge.record(self.held.count)
    }

    /// Stops a shard's work (it drains and settles what it received) and only then drops its
    /// lease, so the next holder starts after the last acked message.
    private func release(_ shard: Int) async {
        guard let holding = state.withLock({ $0.held.removeValue(forKey: shard) }) else { return }
        await holding.consumer.cancel()
        if let error = await holding.finished() {
            logger.error("shard work failed", metadata: ServiceLogKey.metadata([
                .shardStage: "\(stage.name)", .shardIndex: "\(shard)", .shardError: "\(error)",
            ]))
        }
        try? await connection.delete(queue: stage.lease(shard))
        // Every message is acked and nothing more comes. The channel closes a moment later:
        // a quorum queue applies acks through its log, and a channel closed at once could
        // race it into requeueing a message whose ack is in flight, which the next holder
        // would send again.
        let consumer = holding.consumer
        Task {
            try? await Task.sleep(for: .seconds(1))
            await consumer.close()
        }
        handovers.increment()
        heldGauge.record(held.count)
        logger.info("shard released", metadata: ServiceLogKey.metadata([
            .shardStage: "\(stage.name)", .shardIndex: "\(shard)", .shardHeld: "\(held.count)",
        ]))
    }

    /// A reconnect dropped every lease with the old connection (the consumers resumed on the
    /// new one). Leases still free are taken again; a shard that another worker claimed
    /// meanwhile is let go, its consumer only a waiting one under single active consumer.
    private func reclaimAfterReconnect() async throws {
        for shard in held where try await !connection.claim(exclusiveQueue: stage.lease(shard)) {
            guard let holding = state.withLock({ $0.held.removeValue(forKey: shard) }) else { continue }
            await holding.consumer.cancel()
            _ = await holding.finished()
            await holding.consumer.close()
            logger.warning("shard lost across a reconnect", metadata: ServiceLogKey.metadata([
                .shardStage: "\(stage.name)", .shardIndex: "\(shard)",
            ]))
        }
        heldGauge.record(held.count)
    }

    /// A shard whose work ended by itself (its queue was deleted, or the work failed) is
    /// released; a failure stops the worker, which must not go on with a topology it no
    /// longer understands.
    private func reap() throws(ShardWorkFailed) {
        let ended = state.withLock { state in
            let ended = state.held.compactMap { shard, holding in holding.ended.map { (shard, $0) } }
            for (shard, _) in ended { state.held[shard] = nil }
            return ended
        }
        for (shard, result) in ended {
            Task { [connection, stage] in try? await connection.delete(queue: stage.lease(shard)) }
            if case .failure(let error) = result { throw ShardWorkFailed(error: error) }
            logger.warning("shard work ended by itself", metadata: ServiceLogKey.metadata([
                .shardStage: "\(stage.name)", .shardIndex: "\(shard)",
            ]))
        }
    }
}

private struct ShardWorkFailed: Error {
    let error: any Error
}
