// Tests: none needed (declarations only)

/// The lifecycle of a ride. The raw values are the exact strings in `content-state`.
///
/// `completed`, `cancelled` and `failed` are terminal: the server ends the activity.
public enum RideStatus: String, Codable, Hashable, Sendable, CaseIterable {
    case driverAssigned
    case driverEnRoute
    case driverArrived
    case inProgress
    case arriving
    case completed
    case cancelled
    case failed
}
