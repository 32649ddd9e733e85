import Foundation
import LivelineAMQP
import LivelineCodecs
import LivelineMessaging
import LivelineStore
import Logging
import ServiceLifecycle

// Tests: Tests/LivelineRuntimeTests/OutcomeWebhookTests.swift, Tests/LivelineRuntimeTests/ServiceGraphTests.swift

/// The api's ear on `liveline.outcomes`: it keeps every outcome in the store for
/// `GET /v1/events/{id}`, and hands the ones it had not kept before to the producers'
/// webhooks. Its queue, `liveline.outcomes.api`, is bound to every outcome and bounded like a
/// producer's should be (100,000, `reject-publish`), so an api that is down or slow costs
/// outcomes, counted by the workers, never delivery.
///
/// A delivery is acked once its outcome is stored; a broker or store that fails is tried
/// again after 2 s, on a new connection, so the api's other routes serve on regardless.
struct OutcomeRelay: Service {
    let amqp: AMQPConfiguration
    let topology: LivelineTopology
    let store: any ActivityStore
    let webhooks: WebhookDispatcher?
    let logger: Logger

    static let queueLimit: Int64 = 100_000

    var queue: String { "\(topology.outcomesExchange).api" }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await relay()
                } catch is CancellationError {
                    return
                } catch {
                    logger.warning("outcome relay interrupted; trying again", metadata: RuntimeLogKey.metadata([.error: "\(error)"]))
                }
                try? await Task.sleep(for: .seconds(2))
            }
        }
    }

    private func relay() async throws {
        let connection = try await connect(amqp, as: "api-outcomes", logger: logger)
        do {
            try await connection.declare(AMQPTopology(
                exchanges: [.init(topology.outcomesExchange, kind: .topic)],
                queues: [.init(queue, arguments: [
                    "x-queue-type": "quorum", "x-max-length": .int(Self.queueLimit), "x-overflow": "reject-publish",
                ])],
                bindings: [.init(queue: queue, exchange: topology.outcomesExchange, routingKey: "#")]))
            let consumer = try await connection.consume(queue: queue, prefetch: 500)
            while let batch = try await consumer.nextBatch(maxSize: 250, linger: .milliseconds(20)) {
                let outcomes = batch.compactMap { Self.recorded($0.body) }
                if outcomes.count < batch.count {
                    logger.warning("dropped messages on the outcomes queue that are not outcome CloudEvents",
                                   metadata: RuntimeLogKey.metadata([.outcomes: "\(batch.count - outcomes.count)"]))
                }
                let kept = try await store.recordOutcomes(outcomes)
                // New to the store, and once each: a batch can hold an outcome twice.
                var offered: Set<String> = []
                webhooks?.offer(outcomes.filter { kept.contains($0.outcomeID) && offered.insert($0.outcomeID).inserted })
                for delivery in batch { delivery.ack() }
            }
        } catch {
            await connection.close()
            throw error
        }
        await connection.close()
    }

    /// The outcome in a message, or nil for one that is not an outcome CloudEvent (acked,
    /// dropped and logged: no one else reads this queue, and nothing would ever take it).
    static func recorded(_ body: Data) -> RecordedOutcome? {
        guard let event = try? JSONValue.parse(body), case .string(let id)? = event["id"],
            case .string(let eventID)? = event["data"]?["eventId"], case .string(let domain)? = event["data"]?["domain"]
        else { return nil }
        return RecordedOutcome(outcomeID: id, eventID: eventID, domain: domain, at: Date(), body: String(decoding: body, as: UTF8.self))
    }
}
