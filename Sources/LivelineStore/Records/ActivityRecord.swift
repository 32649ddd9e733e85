import Foundation

// Tests: Tests/LivelineStoreTests/ChangeConformanceTests.swift, Tests/LivelineStoreTests/TokenConformanceTests.swift

/// One Live Activity as the store keeps it.
public struct ActivityRecord: Sendable, Hashable, Codable {
    /// The activity id the domain chose (for example a ride id).
    public var id: String
    /// The domain that publishes its events (`ride`, `delivery`, …); empty while pending
    /// if the app did not say.
    public var domain: String
    /// The ActivityKit attributes type name (`RideAttributes`); empty while pending if unknown.
    public var attributesType: String
    /// The user who owns the activity; only their devices may register tokens for it.
    public var userID: String
    /// The static attributes as JSON text, as the translator last stored them.
    public var attributes: String?
    /// The latest applied content-state as JSON text, byte for byte as it was pushed.
    public var contentState: String?
    /// The time of the last applied event, at millisecond precision.
    public var lastEventAt: Date?
    /// When the first event was applied.
    public var startedAt: Date?
    /// When an end was applied.
    public var endedAt: Date?
    /// Why it ended (`completed`, `cancelled`, `expired`, …).
    public var endReason: String?
    /// The priority-10 budget state.
    public var budget: PriorityBudget
    /// The id of the last applied event: a redelivered copy is a duplicate, not stale.
    public var lastEventID: String?
    /// The status of the last applied event: entry alerts fire only when it changes.
    public var lastStatus: String?
    /// The last `aps.timestamp` sent (Unix seconds); the next push must be newer.
    public var lastPushTimestamp: Int64?
    /// When a push-to-start was sent for it (at most one per activity).
    public var pushToStartSentAt: Date?

    public init(
        id: String, domain: String, attributesType: String, userID: String,
        attributes: String? = nil, contentState: String? = nil, lastEventAt: Date? = nil,
        startedAt: Date? = nil, endedAt: Date? = nil, endReason: String? = nil,
        budget: PriorityBudget = PriorityBudget(), lastEventID: String? = nil, lastStatus: String? = nil,
        lastPushTimestamp: Int64? = nil, pushToStartSentAt: Date? = nil
    ) {
        self.id = id
        self.domain = domain
        self.attributesType = attributesType
        self.userID = userID
        self.attributes = attributes
        self.contentState = contentState
        self.lastEventAt = lastEventAt
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.endReason = endReason
        self.budget = budget
        self.lastEventID = lastEventID
        self.lastStatus = lastStatus
        self.lastPushTimestamp = lastPushTimestamp
        self.pushToStartSentAt = pushToStartSentAt
    }

    /// Derived from the times: no event yet is pending, an end time is ended.
    public var status: ActivityStatus {
        if endedAt != nil { return .ended }
        if lastEventAt == nil { return .pending }
        return .active
    }
}
