// Tests: Tests/LivelineCoreTests/BudgetTests.swift, Tests/LivelineCoreTests/GenericDomainTests.swift

/// The per-activity priority-10 budget, per rolling hour window.
///
/// Every update that wants priority 10 counts as a demand. Within `priority10PerHour`
/// demands it goes out at 10; beyond that, up to `hardCapPerHour`, it is downgraded to
/// 5 and its alert is dropped; beyond the cap it is dead-lettered `over-budget`.
/// The `…Frequent` values apply when the user has `frequentPushesEnabled`.
public struct BudgetPolicy: Codable, Hashable, Sendable {
    /// Priority-10 pushes per hour per activity.
    public var priority10PerHour: Int
    /// The same with frequent updates enabled.
    public var priority10PerHourFrequent: Int
    /// Priority-10 demands per hour after which updates are dead-lettered.
    public var hardCapPerHour: Int
    /// The same with frequent updates enabled.
    public var hardCapPerHourFrequent: Int

    /// Creates a budget.
    public init(priority10PerHour: Int, priority10PerHourFrequent: Int, hardCapPerHour: Int, hardCapPerHourFrequent: Int) {
        self.priority10PerHour = priority10PerHour
        self.priority10PerHourFrequent = priority10PerHourFrequent
        self.hardCapPerHour = hardCapPerHour
        self.hardCapPerHourFrequent = hardCapPerHourFrequent
    }

    /// Apple publishes no figure; these are conservative guesses to tune from
    /// production: 10/h (30/h frequent) at priority 10, cap at 60/h (180/h).
    public static let standard = BudgetPolicy(
        priority10PerHour: 10, priority10PerHourFrequent: 30, hardCapPerHour: 60, hardCapPerHourFrequent: 180
    )
}
