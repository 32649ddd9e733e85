import Foundation
import LivelineAMQP
import LivelineMessaging
import Logging
import Synchronization

// Tests: scripts/bench

/// With `e2e --outcomes`: a producer's queue bound to every outcome, drained in this process
/// as a service would drain it, so the broker's part of the cost is enqueue and delivery both.
final class OutcomeDrain: Sendable {
    private let connection: AMQPConnection
    private let queue: String
    private let received = Atomic<Int>(0)
    private let reader = Mutex<Task<Void, Never>?>(nil)

    private init(connection: AMQPConnection, queue: String) {
        self.connection = connection
        self.queue = queue
    }

    static func start(amqpURL: String, topology: LivelineTopology) async throws -> OutcomeDrain {
        var logger = Logger(label: "bench.outcomes")
        logger.logLevel = .error
        let connection = try await AMQPConnection.connect(try AMQPConfiguration(url: amqpURL), logger: logger)
        let queue = "\(topology.outcomesExchange).bench"
        try await connection.declare(topology.amqp)
        try await connection.declare(AMQPTopology(
            queues: [.init(queue, durable: false, arguments: ["x-max-length": 1_000_000, "x-overflow": "reject-publish"])],
            bindings: [.init(queue: queue, exchange: topology.outcomesExchange, routingKey: "#")]))
        _ = try await connection.purge(queue: queue)
        let drain = OutcomeDrain(connection: connection, queue: queue)
        let consumer = try await connection.consume(queue: queue, prefetch: 1_000)
        drain.reader.withLock {
            $0 = Task {
                do {
                    for try await delivery in consumer {
                        drain.received.add(1, ordering: .relaxed)
                        delivery.ack()
                    }
                } catch {}
            }
        }
        return drain
    }

    /// Stops draining; returns how many outcomes arrived.
    func stop() async -> Int {
        reader.withLock { $0 }?.cancel()
        try? await connection.delete(queue: queue)
        await connection.close()
        return received.load(ordering: .relaxed)
    }
}
