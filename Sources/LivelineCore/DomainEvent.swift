import Foundation

/// A CloudEvent whose `data` has been checked against its domain: the unit the
/// translator works on.
///
/// `contentState` and `attributes` are canonical: for typed domains they are the
/// result of decoding into the Swift model and encoding it again with the default
/// `JSONEncoder`, so they are exactly what the app will decode.
public struct DomainEvent: Hashable, Sendable {
    /// The envelope as received.
    public var envelope: CloudEvent
    /// The configured domain, the part of `type` before the first dot.
    public var domain: String
    /// The part of `type` after the domain, e.g. `status`. Informational.
    public var name: String
    /// `data.activityId`.
    public var activityId: String
    /// `data.userId`.
    public var userId: String
    /// The status used for policy lookup (ride `status`, delivery `currentStep`,
    /// score `status`, generic `data.status`).
    public var status: String
    /// The full current content-state, canonical.
    public var contentState: JSONValue {
        didSet { contentStateJSON = JSONValue.encoded(contentState) }
    }
    /// `contentState` as the bytes every payload and the store carry, written once.
    public private(set) var contentStateJSON: Data
    /// The activity attributes when the producer sent them, canonical.
    public var attributes: JSONValue?
    /// `data.message`: free text for alerts, e.g. why a ride failed.
    public var message: String?

    /// Creates a domain event.
    public init(
        envelope: CloudEvent, domain: String, name: String, activityId: String, userId: String,
        status: String, contentState: JSONValue, attributes: JSONValue?, message: String?,
        contentStateJSON: Data? = nil
    ) {
        self.envelope = envelope
        self.domain = domain
        self.name = name
        self.activityId = activityId
        self.userId = userId
        self.status = status
        self.contentState = contentState
        self.contentStateJSON = contentStateJSON ?? JSONValue.encoded(contentState)
        self.attributes = attributes
        self.message = message
    }

    /// The event id (`envelope.id`).
    public var id: String { envelope.id }
    /// The event time (`envelope.time`).
    public var time: EventTime { envelope.time }
}
