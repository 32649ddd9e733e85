import LivelineCore

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

extension UserErasure {
    /// What names a user (by their key) in any dead letter's body: the `userId` of the jobs
    /// written since apps were kept apart.
    static func naming(_ userID: String) -> [String] {
        [#""userId":"\#(userID)""#, #""userId": "\#(userID)""#]
    }

    /// What names them in their own app's letters only: the id alone, as the producers' events
    /// (and the jobs from before) carry it, which in another app is another user. Nil for a
    /// user id that is not an app key.
    static func namingInApp(_ userID: String) -> (prefix: String, needles: [String])? {
        guard let app = AppKeys.prefix(of: userID) else { return nil }
        return (app + "/", naming(AppKeys.id(of: userID)))
    }
}
