import Foundation
import LivelineAMQP
import LivelineLogging
import LivelineMessaging
import LivelineStore
import Logging
import Metrics
import ServiceLifecycle

// Tests: Tests/LivelineServicesTests/DeadLetterPipelineTests.swift

/// Moves every message of `liveline.dead` into the store's `dead_letters` table, where
/// on-call lists, filters, replays and purges them (`liveline dlq`).
///
/// The queue stays the durable buffer and the table the view: a batch is read, stored in
/// one transaction (idempotent by id), and only then acked. A keeper killed between the
/// commit and the ack gets the same messages again, and the ids store them once. Several
/// keepers may run at once (one in every sender by default): they share the queue as
/// competing consumers.
public final class DeadLetterKeeper: Service {
    private let connection: AMQPConnection
    private let store: any ActivityStore
    private let topology: LivelineTopology
    private let batchSize: Int
    private let logger: Logger
    private let kept = Counter(label: "liveline_dead_letters_kept_total")

    /// - Parameters:
    ///   - connection: a connection of its own to consume `liveline.dead` on.
    ///   - batchSize: letters per transaction; the prefetch is twice this.
    public init(
        connection: AMQPConnection, store: any ActivityStore, topology: LivelineTopology = LivelineTopology(),
        batchSize: Int = 500, logger: Logger
    ) {
        self.connection = connection
        self.store = store
        self.topology = topology
        self.batchSize = max(1, batchSize)
        self.logger = logger
    }

    public func run() async throws {
        guard try await brokersOpened([connection]) else { return }
        try await connection.declare(topology.amqp)
        let consumer = try await connection.consume(
            queue: topology.deadQueue, prefetch: UInt16(clamping: batchSize * 2))
        logger.info("dead-letter keeper consuming", metadata: ServiceLogKey.metadata([.deadLetterQueue: "\(topology.deadQueue)"]))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await consumer.cancelAtGracefulShutdown() }
            while let batch = try await consumer.nextBatch(maxSize: batchSize, linger: .milliseconds(20)) {
                await keep(batch)
            }
            group.cancelAll()
        }
    }

    /// Stores one batch, then acks it; on failure requeues it and waits a little, so a store
    /// that is down is retried without spinning.
    private func keep(_ batch: [AMQPDelivery]) async {
        let now = Date()
        let records = batch.flatMap {
            DeadLetterReading.records(
                body: $0.body, properties: $0.properties, routingKey: $0.routingKey, topology: topology, now: now)
        }
        do {
            let new = try await store.keepDeadLetters(records)
            // The letter's id in its activity's trace, so `liveline trace` leads to `dlq show`.
            // Committed before the ack too; a redelivery adds the line again, which is harmless.
            try await store.appendTrace(records.compactMap { record in
                record.activityID.map {
                    TraceEntry(activityID: $0, at: now, kind: .deadLettered,
                               detail: "kept as dead letter \(record.id) (\(record.reason), from the \(record.source.rawValue))")
                }
            })
            for delivery in batch { delivery.ack() }
            kept.increment(by: new)
            var reasons: [String: Int] = [:]
            for record in records { reasons[record.reason, default: 0] += 1 }
            logger.notice("dead letters kept", metadata: ServiceLogKey.metadata([
                .deadLetterCount: "\(records.count)", .deadLetterNew: "\(new)",
                .deadLetterReasons: "\(reasons.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ","))",
            ]))
        } catch {
            for delivery in batch { delivery.nack(requeue: true) }
            logger.error("could not store dead letters; requeued", metadata: ServiceLogKey.metadata([
                .deadLetterBatchSize: "\(batch.count)", .deadLetterError: "\(error)",
            ]))
            try? await Task.sleep(for: .seconds(1))
        }
    }
}
