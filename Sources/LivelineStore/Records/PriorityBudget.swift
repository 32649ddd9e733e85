import Foundation

// Tests: none needed (declarations only)

/// The priority-10 pushes an activity has spent in its current budget window.
public struct PriorityBudget: Sendable, Hashable, Codable {
    /// Priority-10 pushes counted since `windowStart`.
    public var spent: Int
    /// When the current window began; `nil` before the first priority-10 push.
    public var windowStart: Date?

    public init(spent: Int = 0, windowStart: Date? = nil) {
        self.spent = spent
        self.windowStart = windowStart
    }
}
