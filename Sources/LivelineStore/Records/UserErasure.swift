// Tests: Tests/LivelineStoreTests/ErasureConformanceTests.swift, Tests/LivelineServicesTests/GamePipelineTests.swift

/// What ``ActivityStore/forgetUser(_:sharedDomains:)`` removed, by kind.
public struct UserErasure: Sendable, Hashable, Codable {
    public var activities = 0
    public var updateTokens = 0
    public var pushToStartTokens = 0
    public var follows = 0
    public var preferences = 0
    public var traceLines = 0
    public var deadLetters = 0

    public init() {}

    public var total: Int {
        activities + updateTokens + pushToStartTokens + follows + preferences + traceLines + deadLetters
    }
}
