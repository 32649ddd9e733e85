import Foundation
import LivelineAMQP
import LivelineMessaging

// Tests: Tests/LivelineServicesTests/TranslatorServiceTests.swift, Tests/LivelineServicesTests/ShardedTranslatorTests.swift

/// Publishes ``LivelineEvent``s to `liveline.events` the way the translator expects
/// (DESIGN §3): persistent, `mandatory`, with publisher confirms, routing key
/// `<domain>.<name>`, `message_id` = the event id and content-type
/// `application/cloudevents+json`.
///
/// Give it a connection used for publishing only (a consumer on the same connection
/// would share its owner thread with publishes).
public struct EventPublisher: Sendable {
    /// The CloudEvents content type of structured mode.
    public static let contentType = "application/cloudevents+json"

    /// The connection publishes go through.
    public let connection: AMQPConnection
    /// The exchange events are published to (`liveline.events` by default).
    public let exchange: String
    /// The CloudEvents `source` stamped on every event, e.g. `//rides.example.com`.
    public let source: String

    /// Creates a publisher for `topology.eventsExchange`.
    public init(connection: AMQPConnection, source: String, topology: LivelineTopology = LivelineTopology()) {
        self.connection = connection
        self.exchange = topology.eventsExchange
        self.source = source
    }

    /// Publishes one event; returns once the broker confirmed it.
    public func publish(_ event: LivelineEvent) async throws {
        try await connection.publish(message(for: event))
    }

    /// Publishes events pipelined; returns once the broker confirmed all of them, or
    /// throws `AMQPPublishError` naming the ones that failed (the others were confirmed).
    public func publish(contentsOf events: [LivelineEvent]) async throws {
        try await connection.publish(contentsOf: events.map(message(for:)))
    }

    /// The AMQP message for an event, for callers that batch publishes themselves.
    public func message(for event: LivelineEvent) throws -> AMQPMessage {
        Self.message(
            exchange: exchange, routingKey: event.routingKey, body: try event.encoded(source: source), id: event.id,
            type: event.type, time: event.time, activityID: event.activityId)
    }

    /// The AMQP message for an event already in structured mode: what the api publishes for
    /// an event it took over HTTPS.
    public static func message(
        exchange: String, routingKey: String, body: Data, id: String, type: String, time: Date, activityID: String?
    ) -> AMQPMessage {
        AMQPMessage(
            exchange: exchange, routingKey: routingKey, body: body,
            properties: AMQPProperties(
                contentType: contentType,
                // The translate stage's shards are chosen by this header (LivelineTopology).
                headers: activityID.map { [LivelineTopology.activityHeader: .string($0)] } ?? [:],
                persistent: true, messageID: id, timestamp: time, type: type
            ),
            mandatory: true
        )
    }
}
