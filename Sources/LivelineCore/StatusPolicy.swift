// Tests: Tests/LivelineCoreTests/GenericDomainTests.swift

/// What to do when an activity is in (or enters) one status.
///
/// JSON keys and defaults: `isTerminal` (false), `dismissal` ("default"), `alert`
/// (none), `priority` (5, or 10 when terminal), `relevanceScore` (domain's),
/// `staleAfterSeconds` (domain's).
public struct StatusPolicy: Hashable, Sendable {
    /// The status ends the activity (`event: end`).
    public var isTerminal: Bool
    /// How the ended activity is dismissed; only used when terminal.
    public var dismissal: DismissalPolicy
    /// The alert sent when the activity enters this status (and with the end).
    public var alert: AlertTemplate?
    /// The priority when entering this status. Staying in it is a routine update.
    public var priority: PushPriority
    /// Overrides the domain's relevance score.
    public var relevanceScore: Double?
    /// Overrides the domain's freshness window.
    public var staleAfterSeconds: Int64?

    /// Creates a status policy.
    public init(
        isTerminal: Bool = false, dismissal: DismissalPolicy = .default, alert: AlertTemplate? = nil,
        priority: PushPriority? = nil, relevanceScore: Double? = nil, staleAfterSeconds: Int64? = nil
    ) {
        self.isTerminal = isTerminal
        self.dismissal = dismissal
        self.alert = alert
        // Ends default to 10: an end happens once and should not wait in APNs.
        self.priority = priority ?? (isTerminal ? .high : .low)
        self.relevanceScore = relevanceScore
        self.staleAfterSeconds = staleAfterSeconds
    }

    /// The policy for a status a typed domain knows but the configuration omits.
    public static let routine = StatusPolicy()
}

extension StatusPolicy: Codable {
    private enum Keys: String, CodingKey {
        case isTerminal, dismissal, alert, priority, relevanceScore, staleAfterSeconds
    }

    /// Decodes with the documented defaults for absent keys.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        self.init(
            isTerminal: try container.decodeIfPresent(Bool.self, forKey: .isTerminal) ?? false,
            dismissal: try container.decodeIfPresent(DismissalPolicy.self, forKey: .dismissal) ?? .default,
            alert: try container.decodeIfPresent(AlertTemplate.self, forKey: .alert),
            priority: try container.decodeIfPresent(PushPriority.self, forKey: .priority),
            relevanceScore: try container.decodeIfPresent(Double.self, forKey: .relevanceScore),
            staleAfterSeconds: try container.decodeIfPresent(Int64.self, forKey: .staleAfterSeconds)
        )
    }

    /// Encodes every key.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(isTerminal, forKey: .isTerminal)
        try container.encode(dismissal, forKey: .dismissal)
        try container.encodeIfPresent(alert, forKey: .alert)
        try container.encode(priority, forKey: .priority)
        try container.encodeIfPresent(relevanceScore, forKey: .relevanceScore)
        try container.encodeIfPresent(staleAfterSeconds, forKey: .staleAfterSeconds)
    }
}
