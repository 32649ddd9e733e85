// Tests: none needed (declarations only)

/// An activity's priority-10 demands in the current hour window. Kept apart from
/// ``ActivitySnapshot`` because the store keeps budgets in their own table.
public struct BudgetUsage: Codable, Hashable, Sendable {
    /// Priority-10 demands counted in the window (including downgraded ones).
    public var priority10Count: Int
    /// When the window started; nil before the first demand.
    public var windowStart: EventTime?

    /// Creates a usage record.
    public init(priority10Count: Int = 0, windowStart: EventTime? = nil) {
        self.priority10Count = priority10Count
        self.windowStart = windowStart
    }

    /// No demands yet.
    public static let empty = BudgetUsage()
}
