// Tests: Tests/LivelineCoreTests/OverrideTests.swift, Tests/LivelineCoreTests/GenericDomainTests.swift

/// The `apns-priority` of a push. Encoded as the number APNs uses.
public enum PushPriority: Int, Codable, Hashable, Sendable, Comparable {
    /// 5: delivered when convenient for the device; does not draw on the budget.
    case low = 5
    /// 10: delivered immediately; draws on the device's undocumented budget.
    case high = 10

    public static func < (lhs: PushPriority, rhs: PushPriority) -> Bool { lhs.rawValue < rhs.rawValue }
}
