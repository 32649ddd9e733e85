import Foundation

/// One push to send: the message from the translator to the sender on
/// `liveline.push`. Everything the sender needs is here; it never re-translates.
///
/// JSON (independent of the encoder's strategies): `jobId`, `apnsId` (UUID string),
/// `activityId`, `domain`, `eventId`, `eventTime` (RFC 3339, ms), `userId`,
/// `attributesType`, `target` (see ``PushTarget``), `bundleId`, `apnsTopic`
/// (derived, written for readability, ignored on decode), `priority` (5 or 10),
/// `expiration` (Unix seconds, absent for none), `event`, `payload` (base64 of
/// the exact bytes), `isTerminal`, `sequence` (event time in Unix ms).
public struct PushJob: Hashable, Sendable {
    /// SHA-1 of event id and target; stable across redelivery.
    public var jobId: String
    /// The `apns-id` header, derived from `jobId` (UUID v5).
    public var apnsId: UUID
    /// The activity.
    public var activityId: String
    /// The domain.
    public var domain: String
    /// The source event.
    public var eventId: String
    /// The source event's time.
    public var eventTime: EventTime
    /// The user.
    public var userId: String
    /// The ActivityKit attributes type.
    public var attributesType: String
    /// Where to send.
    public var target: PushTarget
    /// The app's bundle id (topic prefix, broadcast path).
    public var bundleId: String
    /// `apns-priority`.
    public var priority: PushPriority
    /// `apns-expiration` in Unix seconds: the stale date, nil for none (ends, which
    /// APNs should store until delivered).
    public var expiration: Int64?
    /// `aps.event`.
    public var event: PushEvent
    /// The exact bytes to send.
    public var payload: Data
    /// The push ends the activity.
    public var isTerminal: Bool
    /// The event time in Unix ms: a queued or retried job with a lower sequence for
    /// the same activity and target is superseded.
    public var sequence: Int64

    /// Creates a job.
    public init(
        jobId: String, apnsId: UUID, activityId: String, domain: String, eventId: String, eventTime: EventTime,
        userId: String, attributesType: String, target: PushTarget, bundleId: String, priority: PushPriority,
        expiration: Int64?, event: PushEvent, payload: Data, isTerminal: Bool, sequence: Int64
    ) {
        self.jobId = jobId
        self.apnsId = apnsId
        self.activityId = activityId
        self.domain = domain
        self.eventId = eventId
        self.eventTime = eventTime
        self.userId = userId
        self.attributesType = attributesType
        self.target = target
        self.bundleId = bundleId
        self.priority = priority
        self.expiration = expiration
        self.event = event
        self.payload = payload
        self.isTerminal = isTerminal
        self.sequence = sequence
    }

    /// `apns-topic` for device-token pushes.
    public var apnsTopic: String { "\(bundleId).push-type.liveactivity" }

    /// Whether this job makes `other` pointless: same activity and target, newer,
    /// and `other` is a plain update (ends and starts are never superseded).
    public func supersedes(_ other: PushJob) -> Bool {
        other.activityId == activityId && other.target == target && other.sequence < sequence
            && other.event == .update
    }
}

extension PushJob: Codable {
    private enum Keys: String, CodingKey {
        case jobId, apnsId, activityId, domain, eventId, eventTime, userId, attributesType, target
        case bundleId, apnsTopic, priority, expiration, event, payload, isTerminal, sequence
    }

    /// Decodes the documented JSON.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        let apnsIdText = try container.decode(String.self, forKey: .apnsId)
        guard let apnsId = UUID(uuidString: apnsIdText) else {
            throw DecodingError.dataCorruptedError(forKey: .apnsId, in: container, debugDescription: "not a UUID: \(apnsIdText)")
        }
        let payloadText = try container.decode(String.self, forKey: .payload)
        guard let payload = Data(base64Encoded: payloadText) else {
            throw DecodingError.dataCorruptedError(forKey: .payload, in: container, debugDescription: "payload is not base64")
        }
        self.init(
            jobId: try container.decode(String.self, forKey: .jobId),
            apnsId: apnsId,
            activityId: try container.decode(String.self, forKey: .activityId),
            domain: try container.decode(String.self, forKey: .domain),
            eventId: try container.decode(String.self, forKey: .eventId),
            eventTime: try container.decode(EventTime.self, forKey: .eventTime),
            userId: try container.decode(String.self, forKey: .userId),
            attributesType: try container.decode(String.self, forKey: .attributesType),
            target: try container.decode(PushTarget.self, forKey: .target),
            bundleId: try container.decode(String.self, forKey: .bundleId),
            priority: try container.decode(PushPriority.self, forKey: .priority),
            expiration: try container.decodeIfPresent(Int64.self, forKey: .expiration),
            event: try container.decode(PushEvent.self, forKey: .event),
            payload: payload,
            isTerminal: try container.decode(Bool.self, forKey: .isTerminal),
            sequence: try container.decode(Int64.self, forKey: .sequence)
        )
    }

    /// Encodes the documented JSON.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(jobId, forKey: .jobId)
        try container.encode(apnsId.uuidString.lowercased(), forKey: .apnsId)
        try container.encode(activityId, forKey: .activityId)
        try container.encode(domain, forKey: .domain)
        try container.encode(eventId, forKey: .eventId)
        try container.encode(eventTime, forKey: .eventTime)
        try container.encode(userId, forKey: .userId)
        try container.encode(attributesType, forKey: .attributesType)
        try container.encode(target, forKey: .target)
        try container.encode(bundleId, forKey: .bundleId)
        try container.encode(apnsTopic, forKey: .apnsTopic)
        try container.encode(priority, forKey: .priority)
        try container.encodeIfPresent(expiration, forKey: .expiration)
        try container.encode(event, forKey: .event)
        try container.encode(payload.base64EncodedString(), forKey: .payload)
        try container.encode(isTerminal, forKey: .isTerminal)
        try container.encode(sequence, forKey: .sequence)
    }
}
