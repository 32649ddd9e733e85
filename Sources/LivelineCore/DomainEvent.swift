import Foundation

/// A CloudEvent whose `data` has been checked against its domain: the unit the
/// translator works on.
///
/// `contentState` and `attributes` are canonical: for typed domains they are the
/// result of decoding into the Swift model and encoding it again with the default
/// `JSONEncoder`, so they are exactly what the app will decode.
public struct DomainEvent: Hashable, Sendable {
    /// The envelope as received.
    public var envelope: CloudEvent {
        get { storage.envelope }
        set { unique().envelope = newValue }
    }
    /// The configured domain, the part of `type` before the first dot.
    public var domain: String {
        get { storage.domain }
        set { unique().domain = newValue }
    }
    /// The part of `type` after the domain, e.g. `status`. Informational.
    public var name: String {
        get { storage.name }
        set { unique().name = newValue }
    }
    /// `data.activityId`.
    public var activityId: String {
        get { storage.activityId }
        set { unique().activityId = newValue }
    }
    /// `data.userId`.
    public var userId: String {
        get { storage.userId }
        set { unique().userId = newValue }
    }
    /// The status used for policy lookup (ride `status`, delivery `currentStep`,
    /// score `status`, generic `data.status`).
    public var status: String {
        get { storage.status }
        set { unique().status = newValue }
    }
    /// The full current content-state, canonical.
    public var contentState: JSONValue {
        get { storage.contentState }
        set {
            let storage = unique()
            storage.contentState = newValue
            storage.contentStateJSON = JSONValue.encoded(newValue)
        }
    }
    /// `contentState` as the bytes every payload and the store carry, written once.
    public var contentStateJSON: Data { storage.contentStateJSON }
    /// The activity attributes when the producer sent them, canonical.
    public var attributes: JSONValue? {
        get { storage.attributes }
        set { unique().attributes = newValue }
    }
    /// `data.message`: free text for alerts, e.g. why a ride failed.
    public var message: String? {
        get { storage.message }
        set { unique().message = newValue }
    }

    /// Creates a domain event.
    public init(
        envelope: CloudEvent, domain: String, name: String, activityId: String, userId: String,
        status: String, contentState: JSONValue, attributes: JSONValue?, message: String?,
        contentStateJSON: Data? = nil
    ) {
        storage = Storage(
            envelope: envelope, domain: domain, name: name, activityId: activityId, userId: userId, status: status,
            contentState: contentState, contentStateJSON: contentStateJSON ?? JSONValue.encoded(contentState),
            attributes: attributes, message: message)
    }

    /// The event id (`envelope.id`).
    public var id: String { envelope.id }
    /// The event time (`envelope.time`).
    public var time: EventTime { envelope.time }

    public static func == (lhs: DomainEvent, rhs: DomainEvent) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.fields == rhs.storage.fields
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(storage.fields)
    }

    // MARK: Storage

    /// The fields live in one copy-on-write box: an event is copied into the batch, its
    /// plan entry and its coalescing group, and copying a box is one retain where copying
    /// the fields (the envelope's strings and JSON among them) was about twenty.
    private var storage: Storage

    private mutating func unique() -> Storage {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
        return storage
    }

    private final class Storage: @unchecked Sendable {
        // Mutated only through `unique()`, so a box shared between copies never changes.
        var envelope: CloudEvent
        var domain: String
        var name: String
        var activityId: String
        var userId: String
        var status: String
        var contentState: JSONValue
        var contentStateJSON: Data
        var attributes: JSONValue?
        var message: String?

        init(
            envelope: CloudEvent, domain: String, name: String, activityId: String, userId: String, status: String,
            contentState: JSONValue, contentStateJSON: Data, attributes: JSONValue?, message: String?
        ) {
            self.envelope = envelope
            self.domain = domain
            self.name = name
            self.activityId = activityId
            self.userId = userId
            self.status = status
            self.contentState = contentState
            self.contentStateJSON = contentStateJSON
            self.attributes = attributes
            self.message = message
        }

        func copy() -> Storage {
            Storage(
                envelope: envelope, domain: domain, name: name, activityId: activityId, userId: userId, status: status,
                contentState: contentState, contentStateJSON: contentStateJSON, attributes: attributes, message: message)
        }

        /// What equality and hashing compare (the bytes follow from the content-state).
        struct Fields: Hashable {
            var envelope: CloudEvent
            var domain, name, activityId, userId, status: String
            var contentState: JSONValue
            var attributes: JSONValue?
            var message: String?
        }

        var fields: Fields {
            Fields(
                envelope: envelope, domain: domain, name: name, activityId: activityId, userId: userId, status: status,
                contentState: contentState, attributes: attributes, message: message)
        }
    }
}
