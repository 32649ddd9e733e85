import Foundation
import LivelineCodecs
import LivelineCore

/// One state change a Swift domain service publishes: the full current state of one
/// Live Activity, as a CloudEvents 1.0 event in structured JSON mode.
///
/// Build it with the typed factories (``ride(activityId:userId:state:attributes:message:name:id:time:)``
/// and friends), which encode the shared `LivelineModels` types with the default
/// `JSONEncoder` — the same shape ActivityKit decodes — or with
/// ``generic(domain:activityId:userId:status:contentState:attributes:message:name:id:time:)``
/// for a domain configured purely as data.
public struct LivelineEvent: Hashable, Sendable {
    /// The CloudEvents `id`; also the AMQP `message_id`, so redeliveries are recognisable.
    public var id: String
    /// The domain, e.g. `ride`; the first part of the CloudEvents `type`.
    public var domain: String
    /// The event name, e.g. `status`; the second part of the CloudEvents `type`.
    public var name: String
    /// When the change happened. The translator orders events by it (millisecond precision).
    public var time: Date
    /// The `data` object: `activityId`, `userId`, `contentState`, and optionally
    /// `attributes`, `message` and (generic domains) `status`.
    public var data: JSONValue
    /// The app the event is for, by its bundle id (the `bundleid` attribute); nil for its
    /// domain's app. Each app's activities, users and topics are its own.
    public var bundleID: String?

    /// Creates an event from an already-built `data` object.
    public init(id: String = UUID().uuidString.lowercased(), domain: String, name: String, time: Date = Date(), data: JSONValue) {
        self.id = id
        self.domain = domain
        self.name = name
        self.time = time
        self.data = data
    }

    /// This event for another app than its domain's: `bundleID`, one of the domain's `apps`.
    public func forApp(_ bundleID: String) -> LivelineEvent {
        var copy = self
        copy.bundleID = bundleID
        return copy
    }

    /// This event with `overrides` in `data.overrides`: this push only, within the domain's
    /// bounds (an event outside them is dead-lettered `invalid-override`).
    public func overriding(_ overrides: EventOverrides) -> LivelineEvent {
        var fields: [String: JSONValue] = [:]
        if let priority = overrides.priority { fields["priority"] = .integer(Int64(priority.rawValue)) }
        if let staleDate = overrides.staleDate { fields["staleDate"] = .string(staleDate.description) }
        if let score = overrides.relevanceScore { fields["relevanceScore"] = .double(score) }
        if let dismissal = overrides.dismissalDate { fields["dismissalDate"] = .string(dismissal.description) }
        if let alert = overrides.alert {
            var alertFields: [String: JSONValue] = ["title": Self.json(alert.title), "body": Self.json(alert.body)]
            if let sound = alert.sound { alertFields["sound"] = .string(sound) }
            if !alert.translations.isEmpty {
                alertFields["translations"] = .object(alert.translations.mapValues {
                    .object(["title": .string($0.title), "body": .string($0.body)])
                })
            }
            fields["alert"] = .object(alertFields)
        }
        var copy = self
        if case .object(var object) = data {
            object["overrides"] = .object(fields)
            copy.data = .object(object)
        }
        return copy
    }

    /// An alert's title or body as `data.overrides.alert` takes it.
    private static func json(_ text: AlertText) -> JSONValue {
        switch text {
        case .text(let text): .string(text)
        case .localized(let key, let arguments): .object(["loc-key": .string(key), "loc-args": .array(arguments.map { .string($0) })])
        }
    }

    /// The CloudEvents `type`: `<domain>.<name>`.
    public var type: String { "\(domain).\(name)" }

    /// The routing key on `liveline.events`: the `type` (DESIGN §3).
    public var routingKey: String { type }

    /// `data.activityId`, when present.
    public var activityId: String? { data["activityId"]?.stringValue }

    /// The structured-mode JSON: deterministic bytes (sorted keys), `time` in RFC 3339
    /// with milliseconds, `subject` = the activity id, and `bundleid` when the event names its app.
    ///
    /// - Parameter source: the CloudEvents `source`, a URI reference naming the producer
    ///   (e.g. `//rides.example.com`).
    public func encoded(source: String) throws -> Data {
        var envelope: [String: JSONValue] = [
            "specversion": .string("1.0"),
            "id": .string(id),
            "source": .string(source),
            "type": .string(type),
            "time": .string(EventTime(time).description),
            "datacontenttype": .string("application/json"),
            "data": data,
        ]
        if let activityId { envelope["subject"] = .string(activityId) }
        if let bundleID { envelope["bundleid"] = .string(bundleID) }
        return JSONValue.encoded(.object(envelope))
    }
}
