import Foundation

// Tests: none needed (declarations only)

/// A state change the translator wants stored: the full current state from one event.
public struct ActivityChange: Sendable, Hashable {
    public var activityID: String
    public var domain: String
    public var attributesType: String
    /// The user the event names. It replaces a pending row's owner (see ``ActivityStore/applyChanges(_:trace:)``).
    public var userID: String
    /// Static attributes JSON; `nil` keeps what is stored.
    public var attributes: String?
    /// The full content-state JSON.
    public var contentState: String
    /// The event's time; the change applies only if it is newer than the stored one.
    public var eventTime: Date
    /// Set when the change ends the activity.
    public var end: End?
    /// The event's id and status.
    public var eventID: String?
    public var status: String?
    /// The `aps.timestamp` sent for the activity so far (Unix seconds); `nil` keeps what
    /// is stored.
    public var pushTimestamp: Int64?
    /// When a push-to-start went out for the activity; the first one stored stays.
    public var pushToStartSentAt: Date?
    /// When the first push that started the activity on a device went out; the first one
    /// stored stays, and nil keeps what is stored (an activity not started yet).
    public var startedAt: Date?
    /// On the change of a shared activity's start: whose followers it started. Followers who
    /// come after it are started late (``ActivityStore/claimLateStarts(now:startedAfter:limit:)``).
    public var sharedStart: SharedStart?

    /// The topics a shared activity's start named, and when its audience was read: a user who
    /// follows one of them from then on was not in it.
    public struct SharedStart: Sendable, Hashable {
        public var topics: [String]
        public var audienceReadAt: Date

        public init(topics: [String], audienceReadAt: Date) {
            self.topics = topics
            self.audienceReadAt = audienceReadAt
        }
    }

    /// How an activity ended.
    public struct End: Sendable, Hashable {
        public var at: Date
        public var reason: String
        public init(at: Date, reason: String) {
            self.at = at
            self.reason = reason
        }
    }

    public init(
        activityID: String, domain: String, attributesType: String, userID: String,
        attributes: String? = nil, contentState: String, eventTime: Date, end: End? = nil,
        eventID: String? = nil, status: String? = nil, pushTimestamp: Int64? = nil, pushToStartSentAt: Date? = nil,
        startedAt: Date? = nil, sharedStart: SharedStart? = nil
    ) {
        self.activityID = activityID
        self.domain = domain
        self.attributesType = attributesType
        self.userID = userID
        self.attributes = attributes
        self.contentState = contentState
        self.eventTime = eventTime
        self.end = end
        self.eventID = eventID
        self.status = status
        self.pushTimestamp = pushTimestamp
        self.pushToStartSentAt = pushToStartSentAt
        self.startedAt = startedAt
        self.sharedStart = sharedStart
    }
}
