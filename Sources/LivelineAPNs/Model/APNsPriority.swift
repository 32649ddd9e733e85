import Foundation

// Tests: Tests/LivelineAPNsTests/DevicePushTests.swift, Tests/LivelineAPNsTests/BroadcastTests.swift

/// `apns-priority`. Live Activities use 10 for important transitions and 5 for routine ticks.
public enum APNsPriority: Int, Sendable, Hashable {
    /// 5: delivered with the device's power considerations; does not draw on the priority-10 budget.
    case low = 5
    /// 10: delivered immediately; draws on the undocumented per-device budget.
    case high = 10
}

/// `apns-expiration`: when APNs should stop trying to deliver a push it had to store.
public enum APNsExpiration: Sendable, Hashable {
    /// `0`: deliver once if possible, never store.
    case immediately
    /// Store until this date (sent as UNIX seconds).
    case at(Date)

    var headerValue: String {
        switch self {
        case .immediately:
            return "0"
        case .at(let date):
            return String(Int(date.timeIntervalSince1970.rounded(.down)))
        }
    }
}
