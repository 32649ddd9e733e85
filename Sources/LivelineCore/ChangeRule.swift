// Tests: none needed (declarations only)

/// An important change inside a status, detected by comparing content-state fields
/// with the last applied state, e.g. a goal (`homeScore` or `awayScore` changed).
public struct ChangeRule: Codable, Hashable, Sendable {
    /// A name for traces, e.g. `score`.
    public var name: String
    /// Top-level content-state fields; the rule fires when any of them changed.
    public var fields: [String]
    /// The alert to send when it fires.
    public var alert: AlertTemplate?
    /// The priority when it fires.
    public var priority: PushPriority
    /// Overrides the relevance score when it fires.
    public var relevanceScore: Double?

    /// Creates a rule.
    public init(name: String, fields: [String], alert: AlertTemplate?, priority: PushPriority = .high, relevanceScore: Double? = nil) {
        self.name = name
        self.fields = fields
        self.alert = alert
        self.priority = priority
        self.relevanceScore = relevanceScore
    }
}
