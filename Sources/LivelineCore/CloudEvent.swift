import LivelineCodecs

// Tests: Tests/LivelineCoreTests/EnvelopeParsingTests.swift

/// A CloudEvents 1.0 event in structured JSON mode, as read off the queue.
///
/// Only the attributes Liveline uses are kept: the required and optional ones it reads, and
/// one extension, `bundleid`, the app the event is for. Other extensions are ignored.
public struct CloudEvent: Hashable, Sendable {
    /// Always "1.0".
    public var specVersion: String
    /// Unique per producer; also the AMQP `message_id`.
    public var id: String
    /// The producer, e.g. `//rides.example.com`.
    public var source: String
    /// `<domain>.<name>`, e.g. `ride.status`; also the routing key.
    public var type: String
    /// Usually the activity id.
    public var subject: String?
    /// When the change happened at the producer. Required by Liveline (optional in
    /// CloudEvents) because it orders updates and becomes `aps.timestamp`.
    public var time: EventTime
    /// The declared media type of `data`, if any.
    public var dataContentType: String?
    /// The event payload (always a JSON object for Liveline).
    public var data: JSONValue
    /// The extension attribute `bundleid`: the app the event is for, by its bundle id. Absent,
    /// the event is for its domain's app (`bundleId` in the domain's configuration).
    public var bundleID: String?

    /// Creates an event.
    public init(
        specVersion: String = "1.0", id: String, source: String, type: String, subject: String? = nil,
        time: EventTime, dataContentType: String? = "application/json", data: JSONValue, bundleID: String? = nil
    ) {
        self.specVersion = specVersion
        self.id = id
        self.source = source
        self.type = type
        self.subject = subject
        self.time = time
        self.dataContentType = dataContentType
        self.data = data
        self.bundleID = bundleID
    }

    /// The routing key a producer publishes this event with: the `type` itself,
    /// which is `<domain>.<name>`.
    public var routingKey: String { type }
}
