import Foundation
import LivelineCore

// Tests: none needed (declarations only)

/// How the api takes events over HTTPS (`POST /v1/events`): who may send them, how many at
/// once, and where they go.
public struct EventIntakeConfiguration: Sendable {
    /// The translator's domains, so an event is checked exactly as the translator will check it.
    public var translator: Translator
    /// The producers and what each may publish; none means every request is refused.
    public var producers: [ProducerCredential]
    /// The most events one batch may hold.
    public var maximumBatchEvents: Int
    /// The largest request body, in bytes: one event, or a whole batch.
    public var maximumBodyBytes: Int
    /// Where accepted events are published, with confirms.
    public var sink: any EventSink
    /// What `Retry-After` says when the broker is down or slow, in seconds.
    public var retryAfterSeconds: Int

    public init(
        translator: Translator, producers: [ProducerCredential], sink: any EventSink, maximumBatchEvents: Int = 100,
        maximumBodyBytes: Int = 1024 * 1024, retryAfterSeconds: Int = 5
    ) {
        self.translator = translator
        self.producers = producers
        self.sink = sink
        self.maximumBatchEvents = maximumBatchEvents
        self.maximumBodyBytes = maximumBodyBytes
        self.retryAfterSeconds = retryAfterSeconds
    }
}

/// Where the api publishes the events it took: the broker's events exchange.
public protocol EventSink: Sendable {
    /// Publishes the events in order. Returns only once the broker confirmed every one;
    /// throws when it could not, or not in time.
    func publish(_ events: [AcceptedEvent]) async throws
}

/// An event the api checked and will publish, in the form the translator reads.
public struct AcceptedEvent: Sendable, Hashable {
    /// The CloudEvents `id`: the AMQP `message_id`.
    public var id: String
    /// The CloudEvents `type`, `<domain>.<name>`: the routing key.
    public var type: String
    /// `data.activityId`, as the producer named it: the translate stage's shard is chosen by it.
    public var activityID: String
    /// When the change happened at the producer.
    public var time: Date
    /// The event in structured mode: deterministic JSON (sorted keys) of the attributes
    /// Liveline reads, whichever mode it came in.
    public var body: Data

    public init(id: String, type: String, activityID: String, time: Date, body: Data) {
        self.id = id
        self.type = type
        self.activityID = activityID
        self.time = time
        self.body = body
    }
}
