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

extension PushJob {
    /// Why a message is not a push job: the field and what is wrong with it.
    public struct FormatError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// The documented JSON. Written by hand, not by `JSONEncoder`: every job goes
    /// through here once in the translator and once in the sender.
    public func encoded() -> Data {
        var writer = JSONWriter(capacity: payload.count * 4 / 3 + 640)
        writer.raw(#"{"jobId":"#); writer.string(jobId)
        writer.raw(#","apnsId":"#); writer.string(apnsId.uuidString.lowercased())
        writer.raw(#","activityId":"#); writer.string(activityId)
        writer.raw(#","domain":"#); writer.string(domain)
        writer.raw(#","eventId":"#); writer.string(eventId)
        writer.raw(#","eventTime":"#); writer.string(RFC3339.format(eventTime))
        writer.raw(#","userId":"#); writer.string(userId)
        writer.raw(#","attributesType":"#); writer.string(attributesType)
        writer.raw(#","target":"#)
        switch target {
        case .device(let token, let kind):
            writer.raw(#"{"device":{"token":"#); writer.string(token)
            writer.raw(#","kind":"#); writer.string(kind.rawValue)
            writer.raw("}}")
        case .channel(let key):
            writer.raw(#"{"channel":{"key":"#); writer.string(key)
            writer.raw("}}")
        }
        writer.raw(#","bundleId":"#); writer.string(bundleId)
        writer.raw(#","apnsTopic":"#); writer.string(apnsTopic)
        writer.raw(#","priority":"#); writer.integer(Int64(priority.rawValue))
        if let expiration {
            writer.raw(#","expiration":"#); writer.integer(expiration)
        }
        writer.raw(#","event":"#); writer.string(event.rawValue)
        writer.raw(#","payload":""#); writer.json(payload.base64EncodedData())
        writer.raw(#"","isTerminal":"#); writer.bool(isTerminal)
        writer.raw(#","sequence":"#); writer.integer(sequence)
        writer.raw("}")
        return writer.data
    }

    /// Reads the documented JSON; `apnsTopic` is derived, so it is ignored.
    public init(json: Data) throws(FormatError) {
        let root: JSONValue
        do { root = try JSONValue.parse(json) } catch { throw FormatError(description: "not JSON: \(error)") }
        guard case .object(let fields) = root else { throw FormatError(description: "not a JSON object") }
        let reader = FieldReader(fields: fields, prefix: "")

        let apnsIdText = try reader.string("apnsId")
        guard let apnsId = UUID(uuidString: apnsIdText) else { throw reader.invalid("apnsId", "is not a UUID") }
        guard let payload = Data(base64Encoded: try reader.string("payload")) else {
            throw reader.invalid("payload", "is not base64")
        }
        guard let eventTime = RFC3339.parse(try reader.string("eventTime")) else {
            throw reader.invalid("eventTime", "is not an RFC 3339 time")
        }
        guard let priority = PushPriority(rawValue: Int(clamping: try reader.integer("priority"))) else {
            throw reader.invalid("priority", "is not 5 or 10")
        }
        guard let event = PushEvent(rawValue: try reader.string("event")) else {
            throw reader.invalid("event", "is not start, update or end")
        }
        var expiration: Int64?
        if fields["expiration"] != nil, fields["expiration"] != .null { expiration = try reader.integer("expiration") }
        self.init(
            jobId: try reader.string("jobId"), apnsId: apnsId, activityId: try reader.string("activityId"),
            domain: try reader.string("domain"), eventId: try reader.string("eventId"), eventTime: eventTime,
            userId: try reader.string("userId"), attributesType: try reader.string("attributesType"),
            target: try Self.target(reader.object("target")), bundleId: try reader.string("bundleId"),
            priority: priority, expiration: expiration, event: event, payload: payload,
            isTerminal: try reader.bool("isTerminal"), sequence: try reader.integer("sequence")
        )
    }

    private static func target(_ reader: FieldReader) throws(FormatError) -> PushTarget {
        if reader.fields["device"] != nil {
            let device = try reader.object("device")
            guard let kind = PushTarget.DeviceTokenKind(rawValue: try device.string("kind")) else {
                throw device.invalid("kind", "is not update or pushToStart")
            }
            return .device(token: try device.string("token"), kind: kind)
        }
        if reader.fields["channel"] != nil {
            return .channel(key: try reader.object("channel").string("key"))
        }
        throw FormatError(description: "target has neither device nor channel")
    }

    /// Typed access to an object's members, with errors that name the field.
    private struct FieldReader {
        let fields: [String: JSONValue]
        let prefix: String

        func invalid(_ key: String, _ problem: String) -> FormatError {
            FormatError(description: "\(prefix)\(key) \(problem)")
        }

        func value(_ key: String) throws(FormatError) -> JSONValue {
            guard let value = fields[key] else { throw FormatError(description: "missing \(prefix)\(key)") }
            return value
        }

        func string(_ key: String) throws(FormatError) -> String {
            guard case .string(let text) = try value(key) else { throw invalid(key, "is not a string") }
            return text
        }

        func integer(_ key: String) throws(FormatError) -> Int64 {
            guard case .integer(let number) = try value(key) else { throw invalid(key, "is not an integer") }
            return number
        }

        func bool(_ key: String) throws(FormatError) -> Bool {
            guard case .bool(let flag) = try value(key) else { throw invalid(key, "is not a boolean") }
            return flag
        }

        func object(_ key: String) throws(FormatError) -> FieldReader {
            guard case .object(let members) = try value(key) else { throw invalid(key, "is not an object") }
            return FieldReader(fields: members, prefix: "\(prefix)\(key).")
        }
    }
}
