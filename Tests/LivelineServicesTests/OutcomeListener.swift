import Foundation
import LivelineAMQP
import LivelineCore
import LivelineMessaging
import Synchronization

/// A producer's queue on the outcomes exchange, as a service would bind one: every outcome
/// that arrives, decoded from its CloudEvent.
final class OutcomeListener: Sendable {
    /// One outcome CloudEvent as it arrived.
    struct Received: Decodable, Sendable {
        var specversion: String
        var id: String
        var source: String
        var type: String
        var subject: String
        var time: String
        var data: EventOutcome
        var routingKey: String = ""

        enum CodingKeys: String, CodingKey { case specversion, id, source, type, subject, time, data }
    }

    let queue: String
    private let connection: AMQPConnection
    private let consumer: AMQPConsumer?
    private final class Inbox: Sendable {
        let received = Mutex<[Received]>([])
    }

    private let inbox: Inbox
    private let reader: Task<Void, Never>

    /// Binds a queue of its own with `keys` (`ride.#`, `#`); `arguments` as a service would
    /// set them (`x-max-length`, `x-overflow`). `consume: false` leaves the messages in the queue.
    init(
        _ topology: LivelineTopology, connection: AMQPConnection, keys: [String] = ["#"], arguments: AMQPTable = [:],
        consume: Bool = true
    ) async throws {
        let queue = "\(topology.outcomesExchange).listener-\(UUID().uuidString.prefix(8))"
        self.queue = queue
        self.connection = connection
        try await connection.declare(AMQPTopology(
            queues: [.init(queue, arguments: arguments)],
            bindings: keys.map { .init(queue: queue, exchange: topology.outcomesExchange, routingKey: $0) }))
        let consumer = consume ? try await connection.consume(queue: queue, prefetch: 500) : nil
        self.consumer = consumer
        let inbox = Inbox()
        self.inbox = inbox
        reader = Task {
            guard let consumer else { return }
            do {
                for try await delivery in consumer {
                    if var outcome = try? JSONDecoder().decode(Received.self, from: delivery.body) {
                        outcome.routingKey = delivery.routingKey
                        inbox.received.withLock { $0.append(outcome) }
                    }
                    delivery.ack()
                }
            } catch {}
        }
    }

    var outcomes: [Received] { inbox.received.withLock { $0 } }

    func outcomes(of eventID: String) -> [Received] { outcomes.filter { $0.data.eventId == eventID } }

    func close() async {
        reader.cancel()
        await consumer?.close()
        try? await connection.delete(queue: queue)
    }
}
