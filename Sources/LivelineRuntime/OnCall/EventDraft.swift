import Foundation
import LivelineCodecs
import LivelineCore

/// An event `liveline publish` builds from its flags, before the translator's own parser
/// judges it: every field a producer can send in `data` has a flag, so on-call can publish
/// whatever a domain accepts.
public struct EventDraft: Sendable {
    /// The domain: the part of `type` before the dot.
    public var domain: String
    /// The part of `type` after the dot.
    public var type: String = "status"
    /// `data.activityId`, also the CloudEvents `subject`.
    public var activity: String
    /// `data.userId`; a shared domain's events need none.
    public var user: String?
    /// `data.contentState`, as JSON text.
    public var state: String
    /// `data.status`, which a generic domain reads its status from.
    public var status: String?
    /// `data.attributes`, as JSON text.
    public var attributes: String?
    /// `data.message`.
    public var message: String?
    /// `data.topics`, comma-separated `<kind>:<id>` (a shared activity's start).
    public var topics: String?
    /// `data.overrides`, each as `key=value` (``overrides(_:eventTime:)``).
    public var overrides: [String] = []
    /// The event time, RFC 3339; now when nil.
    public var time: String?
    /// The `bundleid` attribute: the app the event is for; its domain's when nil.
    public var app: String?

    public init(domain: String, activity: String, state: String) {
        self.domain = domain
        self.activity = activity
        self.state = state
    }

    /// The keys `--override` takes, as `data.overrides` names them.
    public static let overrideKeys = [
        "priority", "relevanceScore", "staleDate", "dismissalDate", "alert.title", "alert.body", "alert.sound",
    ]

    /// The CloudEvent in structured JSON, with a fresh id.
    public func body(now: Date = Date()) throws -> Data {
        let eventTime = try time.map { text -> EventTime in
            guard let parsed = RFC3339.parse(text) else { throw EventDraftError("--time must be RFC 3339, e.g. 2026-11-23T10:00:00.000Z") }
            return parsed
        } ?? EventTime(now)
        var data: [String: JSONValue] = [
            "activityId": .string(activity), "contentState": try Self.json(state, "--state"),
        ]
        if let user { data["userId"] = .string(user) }
        if let status { data["status"] = .string(status) }
        if let attributes { data["attributes"] = try Self.json(attributes, "--attributes") }
        if let message { data["message"] = .string(message) }
        if let topics {
            let list = topics.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            guard !list.isEmpty else { throw EventDraftError("--topics takes <kind>:<id> topics separated by commas, e.g. team:arsenal,league:premier-league") }
            data["topics"] = .array(list.map(JSONValue.string))
        }
        if !overrides.isEmpty { data["overrides"] = try Self.overrides(overrides, eventTime: eventTime) }
        var envelope: [String: JSONValue] = [
            "specversion": .string("1.0"), "id": .string(UUID().uuidString.lowercased()),
            "source": .string("//liveline-cli"), "type": .string("\(domain).\(type)"),
            "subject": .string(activity), "datacontenttype": .string("application/json"),
            "time": .string(RFC3339.format(eventTime)), "data": .object(data),
        ]
        if let app { envelope["bundleid"] = .string(app) }
        return JSONValue.encoded(.object(envelope))
    }

    /// `data.overrides` from `key=value` pairs: `priority` (5 or 10), `relevanceScore` (a
    /// number), `staleDate` and `dismissalDate` (RFC 3339, or `+30m`: that long after the
    /// event), `alert.title`, `alert.body` and `alert.sound` (text). Only the shape is checked
    /// here; the domain's bounds are the translator's (``Translator/overrideViolation(in:)``).
    public static func overrides(_ pairs: [String], eventTime: EventTime) throws -> JSONValue {
        var fields: [String: JSONValue] = [:]
        var alert: [String: JSONValue] = [:]
        var seen: Set<String> = []
        for pair in pairs {
            guard let equals = pair.firstIndex(of: "=") else {
                throw EventDraftError("--override takes key=value, not \(pair); keys: \(overrideKeys.joined(separator: ", "))")
            }
            let key = String(pair[..<equals])
            let value = String(pair[pair.index(after: equals)...])
            guard overrideKeys.contains(key) else {
                throw EventDraftError("--override \(key) is not an override; keys: \(overrideKeys.joined(separator: ", "))")
            }
            guard seen.insert(key).inserted else { throw EventDraftError("--override \(key) is given twice") }
            switch key {
            case "priority":
                guard let priority = Int64(value), priority == 5 || priority == 10 else {
                    throw EventDraftError("--override priority must be 5 or 10, not \(value)")
                }
                fields[key] = .integer(priority)
            case "relevanceScore":
                if let number = Int64(value) {
                    fields[key] = .integer(number)
                } else if let number = Double(value), number.isFinite {
                    fields[key] = .double(number)
                } else {
                    throw EventDraftError("--override relevanceScore must be a number, not \(value)")
                }
            case "staleDate", "dismissalDate":
                fields[key] = .string(RFC3339.format(try time(value, key: key, after: eventTime)))
            default:
                alert[String(key.dropFirst("alert.".count))] = .string(value)
            }
        }
        if !alert.isEmpty {
            guard alert["title"] != nil, alert["body"] != nil else {
                throw EventDraftError("an alert override needs both alert.title and alert.body")
            }
            fields["alert"] = .object(alert)
        }
        return .object(fields)
    }

    /// An RFC 3339 time, or `+<age>` after the event (`+90s`, `+30m`, `+2h`).
    static func time(_ text: String, key: String, after eventTime: EventTime) throws -> EventTime {
        if text.hasPrefix("+"), let seconds = OnCallTime.age(String(text.dropFirst())) {
            return eventTime.adding(seconds: Int64(seconds))
        }
        guard let time = RFC3339.parse(text) else {
            throw EventDraftError("--override \(key) takes an RFC 3339 time or +30m (after the event), not \(text)")
        }
        return time
    }

    private static func json(_ text: String, _ option: String) throws -> JSONValue {
        do { return try JSONValue.parse(text) } catch { throw EventDraftError("\(option) is not JSON: \(error)") }
    }
}

extension Translator {
    /// Parses `body` as the translator will, then checks its overrides against the domain's
    /// bounds, so an event `publish` accepts is one the translator will not dead-letter for
    /// its shape or its overrides.
    public func validateForPublishing(_ body: Data) throws -> DomainEvent {
        let event: DomainEvent
        do {
            event = try parse(body)
        } catch {
            throw EventDraftError("the event is not valid for this deployment's domains: \(error.message)")
        }
        if let violation = overrideViolation(in: event) {
            throw EventDraftError("the translator would dead-letter the event invalid-override: \(violation)")
        }
        return event
    }
}

/// A flag of `liveline publish` that does not make an event, or an event the translator would refuse.
public struct EventDraftError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
