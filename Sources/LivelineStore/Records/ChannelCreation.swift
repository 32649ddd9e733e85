// Tests: Tests/LivelineStoreTests/ChannelAndTraceConformanceTests.swift, Tests/LivelineServicesTests/SenderDeliveryTests.swift

/// The result of recording a newly created broadcast channel.
public enum ChannelCreation: Sendable, Hashable {
    /// This caller's channel is now the one for (domain, key).
    case created(BroadcastChannel)
    /// Another worker stored a live channel first; use it and delete the one just made at APNs.
    case existing(BroadcastChannel)

    /// The channel that is now in force.
    public var channel: BroadcastChannel {
        switch self {
        case .created(let channel), .existing(let channel): return channel
        }
    }
}
