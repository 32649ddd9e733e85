// Tests: Tests/LivelineCoreTests/OverrideTests.swift

/// What a producer may set on one event (`data.overrides`), each within its domain's
/// ``OverrideBounds``: a service that knows more than the policy (a penalty shoot-out is
/// more urgent than any goal) says so for that push only.
///
/// JSON: `{"priority": 10, "staleDate": "<RFC 3339>", "relevanceScore": 90,
/// "dismissalDate": "<RFC 3339>", "alert": {"title": "…", "body": "…", "sound": "default"}}`,
/// every key optional. The alert takes every form of ``AlertTemplate``: plain text, `loc-key`
/// objects, or `translations`.
public struct EventOverrides: Hashable, Sendable {
    /// `apns-priority`; 10 still spends the activity's budget and may be lowered by it.
    public var priority: PushPriority?
    /// `stale-date`, instead of event time + the policy's window.
    public var staleDate: EventTime?
    /// `relevance-score`.
    public var relevanceScore: Double?
    /// `dismissal-date` of an end, instead of the status policy's; a time before the end
    /// dismisses at once.
    public var dismissalDate: EventTime?
    /// The alert, instead of the policy's (the domain's placeholders work in it).
    public var alert: AlertTemplate?

    public init(
        priority: PushPriority? = nil, staleDate: EventTime? = nil, relevanceScore: Double? = nil,
        dismissalDate: EventTime? = nil, alert: AlertTemplate? = nil
    ) {
        self.priority = priority
        self.staleDate = staleDate
        self.relevanceScore = relevanceScore
        self.dismissalDate = dismissalDate
        self.alert = alert
    }
}

/// How far a domain lets producers override its policy per event. A value outside is a
/// dead letter (`invalid-override`) that names the field and the bounds.
///
/// JSON keys and defaults: `allowsHighPriority` (true), `allowsAlert` (true),
/// `maximumAlertLength` (256 characters per text, loc-key and loc-arg), `staleAfterSeconds` ({"minimum": 60,
/// "maximum": 28800}: within the 8 hours an activity lives), `relevanceScore`
/// ({"minimum": 0, "maximum": 100}). A dismissal date is bounded by Apple: at most 4 hours
/// after the end.
public struct OverrideBounds: Hashable, Sendable, Codable {
    public var allowsHighPriority: Bool
    public var allowsAlert: Bool
    public var maximumAlertLength: Int
    public var staleAfterSeconds: Bounds<Int64>
    public var relevanceScore: Bounds<Double>

    /// An inclusive range that reads as `{"minimum": …, "maximum": …}`.
    public struct Bounds<Value: Comparable & Codable & Hashable & Sendable>: Hashable, Sendable, Codable {
        public var minimum: Value
        public var maximum: Value
        public init(minimum: Value, maximum: Value) {
            self.minimum = minimum
            self.maximum = maximum
        }
        func contains(_ value: Value) -> Bool { value >= minimum && value <= maximum }
    }

    public init(
        allowsHighPriority: Bool = true, allowsAlert: Bool = true, maximumAlertLength: Int = 256,
        staleAfterSeconds: Bounds<Int64> = .init(minimum: 60, maximum: 28_800),
        relevanceScore: Bounds<Double> = .init(minimum: 0, maximum: 100)
    ) {
        self.allowsHighPriority = allowsHighPriority
        self.allowsAlert = allowsAlert
        self.maximumAlertLength = maximumAlertLength
        self.staleAfterSeconds = staleAfterSeconds
        self.relevanceScore = relevanceScore
    }

    private enum Keys: String, CodingKey { case allowsHighPriority, allowsAlert, maximumAlertLength, staleAfterSeconds, relevanceScore }

    /// Decodes with the documented defaults for absent keys.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        let defaults = OverrideBounds()
        self.init(
            allowsHighPriority: try container.decodeIfPresent(Bool.self, forKey: .allowsHighPriority) ?? defaults.allowsHighPriority,
            allowsAlert: try container.decodeIfPresent(Bool.self, forKey: .allowsAlert) ?? defaults.allowsAlert,
            maximumAlertLength: try container.decodeIfPresent(Int.self, forKey: .maximumAlertLength) ?? defaults.maximumAlertLength,
            staleAfterSeconds: try container.decodeIfPresent(Bounds<Int64>.self, forKey: .staleAfterSeconds) ?? defaults.staleAfterSeconds,
            relevanceScore: try container.decodeIfPresent(Bounds<Double>.self, forKey: .relevanceScore) ?? defaults.relevanceScore)
    }

    /// Why `overrides` on an event at `eventTime` are refused, or nil when they are within
    /// bounds. `isEnd`: whether the push ends the activity (only an end takes a dismissal date).
    /// `broadcast`: the domain delivers on a channel, whose one payload cannot carry a text per language.
    func violation(of overrides: EventOverrides, eventTime: EventTime, isEnd: Bool, broadcast: Bool) -> String? {
        if overrides.priority == .high, !allowsHighPriority {
            return "overrides.priority 10 is not allowed for this domain"
        }
        if let alert = overrides.alert {
            guard allowsAlert else { return "overrides.alert is not allowed for this domain" }
            if let violation = violation(of: alert, broadcast: broadcast) { return violation }
        }
        if let score = overrides.relevanceScore, !relevanceScore.contains(score) {
            return "overrides.relevanceScore \(score) is outside \(relevanceScore.minimum)...\(relevanceScore.maximum)"
        }
        if let staleDate = overrides.staleDate {
            let after = (staleDate.millisecondsSince1970 - eventTime.millisecondsSince1970) / 1000
            guard staleAfterSeconds.contains(after) else {
                return "overrides.staleDate is \(after) s after the event, outside "
                    + "\(staleAfterSeconds.minimum)...\(staleAfterSeconds.maximum) s"
            }
        }
        if let dismissal = overrides.dismissalDate {
            guard isEnd else { return "overrides.dismissalDate applies only to an event that ends the activity" }
            let after = (dismissal.millisecondsSince1970 - eventTime.millisecondsSince1970) / 1000
            guard after <= LifecycleGuard.maxDismissalSeconds else {
                return "overrides.dismissalDate is \(after) s after the end; iOS removes an ended activity within "
                    + "\(LifecycleGuard.maxDismissalSeconds) s"
            }
        }
        return nil
    }

    /// The alert's texts within ``maximumAlertLength`` each, its loc-args and languages
    /// within ``AlertTemplate/maximumArguments`` and ``AlertTemplate/maximumTranslations``.
    private func violation(of alert: AlertTemplate, broadcast: Bool) -> String? {
        if let problem = alert.problem { return "overrides.alert.\(problem)" }
        if broadcast, !alert.translations.isEmpty {
            return "overrides.alert.translations cannot go on a broadcast channel, which carries one payload: use loc-key"
        }
        guard alert.translations.count <= AlertTemplate.maximumTranslations else {
            return "overrides.alert.translations has \(alert.translations.count) languages, more than \(AlertTemplate.maximumTranslations)"
        }
        var lines = [("title", alert.title), ("body", alert.body)]
        for (language, texts) in alert.translations.sorted(by: { $0.key < $1.key }) {
            lines += [("translations.\(language).title", .text(texts.title)), ("translations.\(language).body", .text(texts.body))]
        }
        for (field, line) in lines {
            if case .localized(_, let arguments) = line, arguments.count > AlertTemplate.maximumArguments {
                return "overrides.alert.\(field) has \(arguments.count) loc-args, more than \(AlertTemplate.maximumArguments)"
            }
            for (index, piece) in line.pieces.enumerated() {
                // A loc-arg may be empty text; a text or a key may not.
                let least = index == 0 ? 1 : 0
                guard piece.count < least || piece.count > maximumAlertLength else { continue }
                let what = if case .localized = line { index == 0 ? "\(field).loc-key" : "\(field).loc-args[\(index - 1)]" } else { field }
                return "overrides.alert.\(what) must be \(least) to \(maximumAlertLength) characters, not \(piece.count)"
            }
        }
        return nil
    }
}

extension Translator {
    /// Why translating `event` would dead-letter it `invalid-override`, or nil when its
    /// `data.overrides` are within its domain's bounds: what `liveline publish` checks before
    /// it publishes. An end is an event whose status the domain treats as terminal.
    public func overrideViolation(in event: DomainEvent) -> String? {
        guard let overrides = event.overrides, let domain = domains[event.domain] else { return nil }
        let policy = domain.configuration.policy
        return policy.overrides.violation(
            of: overrides, eventTime: event.time, isEnd: policy.policy(for: event.status).isTerminal,
            broadcast: domain.configuration.delivery == .channel)
    }
}
