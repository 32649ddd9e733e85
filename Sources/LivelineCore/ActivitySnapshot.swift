import LivelineCodecs

// Tests: Tests/LivelineCoreTests/RoundTripTests.swift

/// What the store knows about one activity, as a plain value the translator reads
/// and returns updated. The translator never mutates storage itself.
public struct ActivitySnapshot: Codable, Hashable, Sendable {
    /// The producer's activity id (`data.activityId`).
    public var id: String
    /// The domain name.
    public var domain: String
    /// The ActivityKit attributes type.
    public var attributesType: String
    /// The user the activity belongs to.
    public var userId: String
    /// The attributes, when known (needed for push-to-start).
    public var attributes: JSONValue?
    /// The last applied content-state (canonical).
    public var lastContentState: JSONValue?
    /// The status of the last applied state.
    public var lastStatus: String?
    /// The id of the last applied event, to spot redelivery.
    public var lastEventId: String?
    /// The time of the last applied event; older or equal events are dropped.
    public var lastEventTime: EventTime?
    /// The last `aps.timestamp` sent, so two events in one second still reach the
    /// device in order (see ``Translator``).
    public var lastPushTimestamp: Int64?
    /// When the first push that started the activity on a device went out (a start, or the
    /// first update to a token the app registered); nil before. The 8-hour lifetime runs
    /// from here.
    public var startedAt: EventTime?
    /// When a push-to-start was sent; no second start is sent for the activity.
    public var pushToStartSentAt: EventTime?
    /// When the activity ended; nothing is sent after this.
    public var endedAt: EventTime?
    /// Why it ended: the terminal status, or `lifetime` when iOS ended it at 8 h.
    public var endReason: String?

    /// Creates a snapshot.
    public init(
        id: String, domain: String, attributesType: String, userId: String,
        attributes: JSONValue? = nil, lastContentState: JSONValue? = nil, lastStatus: String? = nil,
        lastEventId: String? = nil, lastEventTime: EventTime? = nil, lastPushTimestamp: Int64? = nil,
        startedAt: EventTime? = nil, pushToStartSentAt: EventTime? = nil,
        endedAt: EventTime? = nil, endReason: String? = nil
    ) {
        self.id = id
        self.domain = domain
        self.attributesType = attributesType
        self.userId = userId
        self.attributes = attributes
        self.lastContentState = lastContentState
        self.lastStatus = lastStatus
        self.lastEventId = lastEventId
        self.lastEventTime = lastEventTime
        self.lastPushTimestamp = lastPushTimestamp
        self.startedAt = startedAt
        self.pushToStartSentAt = pushToStartSentAt
        self.endedAt = endedAt
        self.endReason = endReason
    }
}
