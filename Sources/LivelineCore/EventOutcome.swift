import Foundation

// Tests: Tests/LivelineCoreTests/SchemaConformanceTests.swift, Tests/LivelineRuntimeTests/RetryTierSettingsTests.swift, Tests/LivelineRuntimeTests/OutcomeWebhookTests.swift

/// What became of one event, told back to the service that published it: the `data` of an
/// outcome CloudEvent on the `liveline.outcomes` exchange (docs/schemas/outcome.schema.json).
///
/// An event has one outcome per push it became (a delivery per device, a device gone, a dead
/// letter) or one for the whole event when the translator dropped or dead-lettered it.
/// A push to a channel is delivered once, to the channel, not per device.
public struct EventOutcome: Codable, Hashable, Sendable {
    public enum Kind: String, Codable, Hashable, Sendable, CaseIterable {
        /// APNs took a push (`apnsId`, `target`).
        case delivered
        /// APNs answered 410: the device's token is gone and was removed.
        case deviceGone = "device-gone"
        /// In the dead-letter queue (`reason`, `deadLetterId`).
        case deadLettered = "dead-lettered"
        /// Not sent, by a documented rule (`reason`: stale, superseded, after-end, …).
        case dropped
        /// On-call replayed the event's dead letter (`deadLetterId`).
        case replayed
    }

    public var outcome: Kind
    /// The CloudEvents `id` of the event.
    public var eventId: String
    public var domain: String
    /// The activity as the event named it, within ``bundleId``'s app.
    public var activityId: String
    /// The app the event was for.
    public var bundleId: String?
    /// The drop or dead-letter reason, as in docs/reference/reasons.md.
    public var reason: String?
    /// The push's `apns-id`.
    public var apnsId: String?
    /// Where the push went: a token kind and its first 8 hex digits, or a channel's key.
    /// Never a full token.
    public var target: String?
    /// The dead letter's id, for `liveline dlq show`.
    public var deadLetterId: String?
    /// The push it became: `update`, `end` or `start`.
    public var push: String?

    /// - Parameters:
    ///   - activityId: the activity's key (``AppKeys``), which the outcome names by the id the
    ///     producer knows, within `app`.
    ///   - app: the app the event was for, when known.
    public init(
        _ outcome: Kind, eventId: String, domain: String, activityId: String, app: String? = nil, reason: String? = nil,
        apnsId: String? = nil, target: String? = nil, deadLetterId: String? = nil, push: String? = nil
    ) {
        self.outcome = outcome
        self.eventId = eventId
        self.domain = domain
        self.activityId = AppKeys.id(of: activityId)
        self.bundleId = app
        self.reason = reason
        self.apnsId = apnsId
        self.target = target
        self.deadLetterId = deadLetterId
        self.push = push
    }
}

extension EventOutcome {
    /// The outcome as a CloudEvent in structured JSON mode (docs/schemas/outcome.schema.json):
    /// type `liveline.outcome.<outcome>`, subject the activity, `data` this outcome.
    public func cloudEvent(id: String, source: String, time: Date) -> Data {
        let event = CloudEvent(
            id: id, source: source, type: "liveline.outcome.\(outcome.rawValue)", subject: activityId,
            time: RFC3339.format(EventTime(time)), data: self)
        // Encoding a struct of strings cannot fail.
        return (try? JSONEncoder().encode(event)) ?? Data()
    }

    private struct CloudEvent: Encodable {
        var specversion = "1.0"
        var id: String
        var source: String
        var type: String
        var subject: String
        var time: String
        var datacontenttype = "application/json"
        var data: EventOutcome
    }
}

/// The domains whose events get outcomes (`liveline.outcomes.domains`): a comma-separated list,
/// `*` for every domain, empty (the default) for none. Off by default because an outcome is a
/// message of its own, which the broker charges as much as the event's (docs/PERFORMANCE.md).
public struct OutcomeDomains: Sendable, Hashable {
    private let all: Bool
    private let names: Set<String>

    public static let none = OutcomeDomains(all: false, names: [])
    public static let all = OutcomeDomains(all: true, names: [])

    private init(all: Bool, names: Set<String>) {
        self.all = all
        self.names = names
    }

    /// Parses the setting's text. Each name is checked against the configured domains at
    /// start, which also refuses one that is not a domain name.
    public init(parsing text: String) {
        let items = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        let all = items.contains("*")
        self.init(all: all, names: all ? [] : Set(items))
    }

    /// Domains named, not `*`: checked against the configured domains at start.
    public var named: Set<String> { names }

    public var isEmpty: Bool { !all && names.isEmpty }

    public func reports(_ domain: String) -> Bool { all || names.contains(domain) }
}
