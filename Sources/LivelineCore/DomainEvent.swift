import Foundation
import LivelineCodecs

// Tests: Tests/LivelineCoreTests/EnvelopeParsingTests.swift, Tests/LivelineCoreTests/PayloadValidationTests.swift

/// A CloudEvent whose `data` has been checked against its domain: the unit the
/// translator works on.
///
/// `contentState` and `attributes` are canonical: for typed domains they are the
/// result of decoding into the Swift model and encoding it again with the default
/// `JSONEncoder`, so they are exactly what the app will decode.
public struct DomainEvent: Hashable, Sendable {
    /// The envelope as received.
    public var envelope: CloudEvent {
        get { storage.fields.envelope }
        set { unique().fields.envelope = newValue }
    }
    /// The configured domain, the part of `type` before the first dot.
    public var domain: String {
        get { storage.fields.domain }
        set { unique().fields.domain = newValue }
    }
    /// The part of `type` after the domain, e.g. `status`. Informational.
    public var name: String {
        get { storage.fields.name }
        set { unique().fields.name = newValue }
    }
    /// The app the event is for: its `bundleid` attribute, else its domain's app.
    public var app: String {
        get { storage.fields.app }
        set { unique().fields.app = newValue }
    }
    /// `data.activityId` as the store keys it, within the app (``AppKeys``).
    public var activityId: String {
        get { storage.fields.activityId }
        set { unique().fields.activityId = newValue }
    }
    /// `data.userId` as the store keys it, within the app (``AppKeys``); empty for a shared
    /// domain's event that names no user.
    public var userId: String {
        get { storage.fields.userId }
        set { unique().fields.userId = newValue }
    }
    /// The status used for policy lookup (ride `status`, delivery `currentStep`,
    /// score `status`, generic `data.status`).
    public var status: String {
        get { storage.fields.status }
        set { unique().fields.status = newValue }
    }
    /// The full current content-state, canonical.
    public var contentState: JSONValue {
        get { storage.fields.contentState }
        set {
            let storage = unique()
            storage.fields.contentState = newValue
            storage.fields.contentStateJSON = JSONValue.encoded(newValue)
        }
    }
    /// `contentState` as the bytes every payload and the store carry, written once.
    public var contentStateJSON: Data { storage.fields.contentStateJSON }
    /// The activity attributes when the producer sent them, canonical.
    public var attributes: JSONValue? {
        get { storage.fields.attributes }
        set { unique().fields.attributes = newValue }
    }
    /// `data.topics`: on a shared activity's start, the topics whose followers it starts
    /// for (`team:arsenal`, `league:epl`), as the store keys them within the app; nil when absent.
    public var topics: [String]? {
        get { storage.fields.topics }
        set { unique().fields.topics = newValue }
    }
    /// `data.overrides`: the producer's per-event settings, checked against the domain's bounds.
    public var overrides: EventOverrides? {
        get { storage.fields.overrides }
        set { unique().fields.overrides = newValue }
    }
    /// `data.message`: free text for alerts, e.g. why a ride failed.
    public var message: String? {
        get { storage.fields.message }
        set { unique().fields.message = newValue }
    }

    /// The highest priority its pushes may have, when less than the policy's: a replayed
    /// `over-budget` letter is capped at ``PushPriority/low``, which spends no budget. It comes
    /// from the message's headers, never from the producer's event.
    public var priorityCap: PushPriority? {
        get { storage.fields.priorityCap }
        set { unique().fields.priorityCap = newValue }
    }

    /// Creates a domain event.
    public init(
        envelope: CloudEvent, domain: String, name: String, app: String, activityId: String, userId: String,
        status: String, contentState: JSONValue, attributes: JSONValue?, message: String?,
        contentStateJSON: Data? = nil, topics: [String]? = nil, overrides: EventOverrides? = nil
    ) {
        storage = Storage(Fields(
            envelope: envelope, domain: domain, name: name, app: app, activityId: activityId, userId: userId, status: status,
            contentState: contentState, contentStateJSON: contentStateJSON ?? JSONValue.encoded(contentState),
            attributes: attributes, topics: topics, overrides: overrides, message: message, priorityCap: nil))
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
        if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.fields) }
        return storage
    }

    private struct Fields: Hashable {
        var envelope: CloudEvent
        var domain, name, app, activityId, userId, status: String
        var contentState: JSONValue
        var contentStateJSON: Data
        var attributes: JSONValue?
        var topics: [String]?
        var overrides: EventOverrides?
        var message: String?
        var priorityCap: PushPriority?
    }

    /// Changed only through `unique()`, so a box shared between copies never changes.
    private final class Storage: @unchecked Sendable {
        var fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }
}
