// Tests: Tests/LivelineCoreTests/GenericDomainTests.swift

/// A domain's push policy as data: per-status behaviour, important-change rules,
/// freshness, relevance, push-to-start and budget.
///
/// JSON keys and defaults: `staleAfterSeconds` (none), `relevanceScore` (none),
/// `routinePriority` (5), `statuses` ({}), `changeRules` ([]), `pushToStartAlert`
/// (none: push-to-start disabled), `budget` (``BudgetPolicy/standard``), `overrides`
/// (``OverrideBounds``' defaults), `fallbackLanguage` (`en`).
public struct DomainPolicy: Hashable, Sendable {
    /// `stale-date` = event time + this window; nil sends no stale date.
    public var staleAfterSeconds: Int64?
    /// The default `relevance-score`; nil sends none.
    public var relevanceScore: Double?
    /// The priority of a routine update (status unchanged, no change rule fired).
    public var routinePriority: PushPriority
    /// Per-status behaviour, keyed by status string.
    public var statuses: [String: StatusPolicy]
    /// Important changes within a status.
    public var changeRules: [ChangeRule]
    /// The alert of a push-to-start (`alert` is required on `start`). Nil disables
    /// push-to-start for the domain.
    public var pushToStartAlert: AlertTemplate?
    /// The priority-10 budget.
    public var budget: BudgetPolicy
    /// How far producers may override this policy per event.
    public var overrides: OverrideBounds
    /// The language whose translation an alert with per-language texts shows on a device that
    /// registered no locale, or one the alert has no text for (``AlertTemplate/translations``).
    public var fallbackLanguage: String

    /// Creates a policy.
    public init(
        staleAfterSeconds: Int64? = nil, relevanceScore: Double? = nil, routinePriority: PushPriority = .low,
        statuses: [String: StatusPolicy] = [:], changeRules: [ChangeRule] = [],
        pushToStartAlert: AlertTemplate? = nil, budget: BudgetPolicy = .standard, overrides: OverrideBounds = OverrideBounds(),
        fallbackLanguage: String = "en"
    ) {
        self.overrides = overrides
        self.fallbackLanguage = AlertLanguage.normalized(fallbackLanguage)
        self.staleAfterSeconds = staleAfterSeconds
        self.relevanceScore = relevanceScore
        self.routinePriority = routinePriority
        self.statuses = statuses
        self.changeRules = changeRules
        self.pushToStartAlert = pushToStartAlert
        self.budget = budget
    }

    /// The policy for a status; statuses not listed are routine, non-terminal.
    public func policy(for status: String) -> StatusPolicy {
        statuses[status] ?? .routine
    }

    /// Every alert the policy can send, by where it is configured.
    var alerts: [(path: String, alert: AlertTemplate)] {
        var alerts: [(String, AlertTemplate)] = []
        if let pushToStartAlert { alerts.append(("pushToStartAlert", pushToStartAlert)) }
        for (status, policy) in statuses.sorted(by: { $0.key < $1.key }) {
            if let alert = policy.alert { alerts.append(("statuses.\(status).alert", alert)) }
        }
        for rule in changeRules {
            if let alert = rule.alert { alerts.append(("changeRules.\(rule.name).alert", alert)) }
        }
        return alerts
    }
}

extension DomainPolicy: Codable {
    private enum Keys: String, CodingKey {
        case staleAfterSeconds, relevanceScore, routinePriority, statuses, changeRules, pushToStartAlert, budget, overrides
        case fallbackLanguage
    }

    /// Decodes with the documented defaults for absent keys.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        self.init(
            staleAfterSeconds: try container.decodeIfPresent(Int64.self, forKey: .staleAfterSeconds),
            relevanceScore: try container.decodeIfPresent(Double.self, forKey: .relevanceScore),
            routinePriority: try container.decodeIfPresent(PushPriority.self, forKey: .routinePriority) ?? .low,
            statuses: try container.decodeIfPresent([String: StatusPolicy].self, forKey: .statuses) ?? [:],
            changeRules: try container.decodeIfPresent([ChangeRule].self, forKey: .changeRules) ?? [],
            pushToStartAlert: try container.decodeIfPresent(AlertTemplate.self, forKey: .pushToStartAlert),
            budget: try container.decodeIfPresent(BudgetPolicy.self, forKey: .budget) ?? .standard,
            overrides: try container.decodeIfPresent(OverrideBounds.self, forKey: .overrides) ?? OverrideBounds(),
            fallbackLanguage: try container.decodeIfPresent(String.self, forKey: .fallbackLanguage) ?? "en"
        )
        guard AlertLanguage.isValid(fallbackLanguage) else {
            throw DecodingError.dataCorruptedError(
                forKey: .fallbackLanguage, in: container, debugDescription: "\(fallbackLanguage) is not a language tag such as en or pt-BR")
        }
    }

    /// Encodes every key.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encodeIfPresent(staleAfterSeconds, forKey: .staleAfterSeconds)
        try container.encodeIfPresent(relevanceScore, forKey: .relevanceScore)
        try container.encode(routinePriority, forKey: .routinePriority)
        try container.encode(statuses, forKey: .statuses)
        try container.encode(changeRules, forKey: .changeRules)
        try container.encodeIfPresent(pushToStartAlert, forKey: .pushToStartAlert)
        try container.encode(budget, forKey: .budget)
        try container.encode(overrides, forKey: .overrides)
        try container.encode(fallbackLanguage, forKey: .fallbackLanguage)
    }
}
