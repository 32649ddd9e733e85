import Foundation
import LivelineCodecs
import LivelineModels

/// One push to send: the message from the translator to the sender on
/// `liveline.push`. Everything the sender needs is here; it never re-translates.
///
/// JSON (independent of the encoder's strategies): `jobId`, `apnsId` (UUID string),
/// `activityId`, `domain`, `eventId`, `eventTime` (RFC 3339, ms), `userId`,
/// `attributesType`, `target` (see ``PushTarget``), `bundleId`, `apnsTopic`
/// (derived, written for readability, ignored on decode), `priority` (5 or 10),
/// `expiration` (Unix seconds, absent for none), `event`, `payload` (base64 of
/// the exact bytes), `isTerminal`, `sequence` (event time in Unix ms), and `alerts`
/// (`true` when the payload carries an alert; absent for none).
public struct PushJob: Hashable, Sendable {
    /// How many leading hex digits of ``jobId`` name a job in the trace: the jobs of one
    /// activity stay apart, and a line stays short enough to read.
    @inlinable public static var shownIDLength: Int { 12 }

    /// SHA-1 of event id and target; stable across redelivery.
    public var jobId: String {
        get { box.stored.jobId }
        set { update { $0.jobId = newValue } }
    }
    /// The `apns-id` header, derived from `jobId` (UUID v5).
    public var apnsId: UUID {
        get { box.stored.apnsId }
        set { update { $0.apnsId = newValue } }
    }
    /// The activity.
    public var activityId: String {
        get { box.stored.activityId }
        set { update { $0.activityId = newValue } }
    }
    /// The domain.
    public var domain: String {
        get { box.stored.domain }
        set { update { $0.domain = newValue } }
    }
    /// The source event.
    public var eventId: String {
        get { box.stored.eventId }
        set { update { $0.eventId = newValue } }
    }
    /// The source event's time.
    public var eventTime: EventTime {
        get { box.stored.eventTime }
        set { update { $0.eventTime = newValue } }
    }
    /// The user.
    public var userId: String {
        get { box.stored.userId }
        set { update { $0.userId = newValue } }
    }
    /// The ActivityKit attributes type.
    public var attributesType: String {
        get { box.stored.attributesType }
        set { update { $0.attributesType = newValue } }
    }
    /// Where to send.
    public var target: PushTarget {
        get { box.stored.target }
        set { update { $0.target = newValue } }
    }
    /// The app's bundle id (topic prefix, broadcast path).
    public var bundleId: String {
        get { box.stored.bundleId }
        set { update { $0.bundleId = newValue } }
    }
    /// `apns-priority`.
    public var priority: PushPriority {
        get { box.stored.priority }
        set { update { $0.priority = newValue } }
    }
    /// `apns-expiration` in Unix seconds: the stale date, nil for none (ends, which
    /// APNs should store until delivered).
    public var expiration: Int64? {
        get { box.stored.expiration }
        set { update { $0.expiration = newValue } }
    }
    /// `aps.event`.
    public var event: PushEvent {
        get { box.stored.event }
        set { update { $0.event = newValue } }
    }
    /// The exact bytes to send.
    public var payload: Data {
        get { box.stored.payload }
        set { update { $0.payload = newValue } }
    }
    /// The push ends the activity.
    public var isTerminal: Bool {
        get { box.stored.isTerminal }
        set { update { $0.isTerminal = newValue } }
    }
    /// The event time in Unix ms: a queued or retried job with a lower sequence for
    /// the same activity and target is superseded.
    public var sequence: Int64 {
        get { box.stored.sequence }
        set { update { $0.sequence = newValue } }
    }
    /// The payload carries an alert (`aps.alert`).
    public var alerts: Bool {
        get { box.stored.alerts }
        set { update { $0.alerts = newValue } }
    }

    /// Whether a person would notice this push arrive: an alert lights the screen, and
    /// priority 10 shows the update at once. Such an update is never coalesced away
    /// (docs/translation-rules.md): the newer state after it would reach the device
    /// silently, and the moment would never show.
    public var isNoticeable: Bool { alerts || priority == .high }

    /// The fields, behind one shared reference. A job is over 200 bytes, and every async
    /// frame on the sender's path kept copies of it: `process` and `record` had 4.6 KB
    /// frames, which the task allocator takes from malloc for every push. Behind a box a
    /// copy is a pointer and a retain. The box never changes: a setter makes a new one.
    private let box: Box

    private final class Box: Sendable {
        let stored: Stored

        init(_ stored: Stored) {
            self.stored = stored
        }
    }

    private struct Stored: Hashable, Sendable {
        var jobId: String
        var apnsId: UUID
        var activityId: String
        var domain: String
        var eventId: String
        var eventTime: EventTime
        var userId: String
        var attributesType: String
        var target: PushTarget
        var bundleId: String
        var priority: PushPriority
        var expiration: Int64?
        var event: PushEvent
        var payload: Data
        var isTerminal: Bool
        var sequence: Int64
        var alerts: Bool
    }

    private mutating func update(_ change: (inout Stored) -> Void) {
        var stored = box.stored
        change(&stored)
        self = PushJob(box: Box(stored))
    }

    private init(box: Box) {
        self.box = box
    }

    public static func == (lhs: PushJob, rhs: PushJob) -> Bool {
        lhs.box === rhs.box || lhs.box.stored == rhs.box.stored
    }

    public func hash(into hasher: inout Hasher) {
        box.stored.hash(into: &hasher)
    }

    /// Creates a job.
    public init(
        jobId: String, apnsId: UUID, activityId: String, domain: String, eventId: String, eventTime: EventTime,
        userId: String, attributesType: String, target: PushTarget, bundleId: String, priority: PushPriority,
        expiration: Int64?, event: PushEvent, payload: Data, isTerminal: Bool, sequence: Int64, alerts: Bool = false
    ) {
        box = Box(Stored(
            jobId: jobId, apnsId: apnsId, activityId: activityId, domain: domain, eventId: eventId,
            eventTime: eventTime, userId: userId, attributesType: attributesType, target: target, bundleId: bundleId,
            priority: priority, expiration: expiration, event: event, payload: payload, isTerminal: isTerminal, sequence: sequence,
            alerts: alerts))
    }

    /// `apns-topic` for device-token pushes.
    public var apnsTopic: String { "\(bundleId).push-type.liveactivity" }

    /// Whether this job makes `other` pointless: same activity and target, newer,
    /// and `other` is a plain update that nobody would notice arrive (ends and starts are
    /// never superseded, and neither is an alert or a priority-10 update: ``isNoticeable``).
    public func supersedes(_ other: PushJob) -> Bool {
        other.activityId == activityId && other.target == target && other.sequence < sequence
            && other.event == .update && !other.isNoticeable
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
        writer.raw(#","apnsId":"#); writer.string(apnsId.hyphenated(uppercase: false))
        writer.raw(#","activityId":"#); writer.string(activityId)
        writer.raw(#","domain":"#); writer.string(domain)
        writer.raw(#","eventId":"#); writer.string(eventId)
        writer.raw(#","eventTime":"#); writer.string(RFC3339.format(eventTime))
        writer.raw(#","userId":"#); writer.string(userId)
        writer.raw(#","attributesType":"#); writer.string(attributesType)
        writer.raw(#","target":"#)
        switch target {
        case .device(let token, let kind, let environment):
            writer.raw(#"{"device":{"token":"#); writer.string(token)
            writer.raw(#","kind":"#); writer.string(kind.rawValue)
            if environment != .production {
                writer.raw(#","environment":"#); writer.string(environment.rawValue)
            }
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
        if alerts { writer.raw(#","alerts":true"#) }
        writer.raw("}")
        return writer.data
    }

    /// Reads the documented JSON; `apnsTopic` is derived, so it is ignored, as are keys
    /// it does not know. Read member by member rather than into a dictionary: the sender
    /// reads every job it takes off the queue.
    public init(json: Data) throws(FormatError) {
        var fields = Fields()
        do {
            try JSONReader.read(json) { reader in
                try reader.keyedMembers(depth: 0) { key, reader in
                    if key == "target" {
                        fields.sawTarget = true
                        try reader.keyedMembers(depth: 1) { kind, reader in
                            var members = TargetFields()
                            try reader.keyedMembers(depth: 2) { name, reader in try members.read(name, from: &reader) }
                            if kind == "device" {
                                fields.device = members
                            } else if kind == "channel" {
                                fields.channel = members
                            }
                        }
                    } else {
                        try fields.read(key, from: &reader)
                    }
                }
            }
        } catch let error as FormatError {
            throw error
        } catch {
            throw FormatError(description: "not a JSON object: \(error)")
        }

        typealias F = Fields
        guard let apnsId = UUID(hyphenated: try F.string(fields.apnsId, "apnsId")) else {
            throw F.invalid("apnsId", "is not a UUID")
        }
        guard let payload = Data(base64Encoded: try F.string(fields.payload, "payload")) else {
            throw F.invalid("payload", "is not base64")
        }
        guard let eventTime = RFC3339.parse(try F.string(fields.eventTime, "eventTime")) else {
            throw F.invalid("eventTime", "is not an RFC 3339 time")
        }
        guard let priority = PushPriority(rawValue: Int(clamping: try F.integer(fields.priority, "priority"))) else {
            throw F.invalid("priority", "is not 5 or 10")
        }
        guard let event = PushEvent(rawValue: try F.string(fields.event, "event")) else {
            throw F.invalid("event", "is not start, update or end")
        }
        let expiration: Int64?
        switch fields.expiration {
        case .value(let seconds): expiration = seconds
        case .absent: expiration = nil
        case .mistyped: throw F.invalid("expiration", "is not an integer")
        }
        self.init(
            jobId: try F.string(fields.jobId, "jobId"), apnsId: apnsId,
            activityId: try F.string(fields.activityId, "activityId"), domain: try F.string(fields.domain, "domain"),
            eventId: try F.string(fields.eventId, "eventId"), eventTime: eventTime,
            userId: try F.string(fields.userId, "userId"), attributesType: try F.string(fields.attributesType, "attributesType"),
            target: try fields.pushTarget(), bundleId: try F.string(fields.bundleId, "bundleId"),
            priority: priority, expiration: expiration, event: event, payload: payload,
            isTerminal: try F.bool(fields.isTerminal, "isTerminal"), sequence: try F.integer(fields.sequence, "sequence"),
            alerts: try F.optionalBool(fields.alerts, "alerts")
        )
    }

    /// The members of `target.device` or `target.channel` a job uses; others are ignored.
    private struct TargetFields {
        var token = Member<String>.absent, kind = Member<String>.absent
        var environment = Member<String>.absent, key = Member<String>.absent

        mutating func read(_ name: JSONKey, from reader: inout JSONReader) throws {
            if name == "token" {
                token = try Fields.string(&reader, depth: 3)
            } else if name == "kind" {
                kind = try Fields.string(&reader, depth: 3)
            } else if name == "environment" {
                environment = try Fields.string(&reader, depth: 3)
            } else if name == "key" {
                key = try Fields.string(&reader, depth: 3)
            } else {
                _ = try reader.value(depth: 3)
            }
        }
    }

    /// A member as read: absent, of the type its field takes, or of another type.
    private enum Member<Value> {
        case absent
        case value(Value)
        case mistyped
    }

    /// A job's members as read, then checked and converted with errors that name the field.
    /// Each is kept as the type its field takes, not as a `JSONValue`: copying and destroying
    /// sixteen of those was 2,000 instructions a job in the sender.
    private struct Fields {
        typealias Text = Member<String>
        var jobId = Text.absent, apnsId = Text.absent, activityId = Text.absent, domain = Text.absent
        var eventId = Text.absent, eventTime = Text.absent, userId = Text.absent, attributesType = Text.absent
        var bundleId = Text.absent, event = Text.absent, payload = Text.absent
        var priority = Member<Int64>.absent, sequence = Member<Int64>.absent
        /// `null` stands for no expiration, as absent does.
        var expiration = Member<Int64?>.absent
        var isTerminal = Member<Bool>.absent
        /// Absent means none, as the translator writes it (a job queued by an older
        /// translator reads as one without: coalesced as it was then).
        var alerts = Member<Bool>.absent
        var sawTarget = false
        /// `target`'s members: read into fields, not dictionaries, as every job has one.
        var device, channel: TargetFields?

        /// Keys are compared as bytes (a `switch` on a `String` would need one made per key),
        /// after a switch on their length that leaves at most three to compare.
        mutating func read(_ key: JSONKey, from reader: inout JSONReader) throws {
            switch key.count {
            case 5 where key == "jobId": jobId = try Self.string(&reader)
            case 5 where key == "event": event = try Self.string(&reader)
            case 6 where key == "apnsId": apnsId = try Self.string(&reader)
            case 6 where key == "domain": domain = try Self.string(&reader)
            case 6 where key == "userId": userId = try Self.string(&reader)
            case 7 where key == "eventId": eventId = try Self.string(&reader)
            case 7 where key == "payload": payload = try Self.string(&reader)
            case 8 where key == "bundleId": bundleId = try Self.string(&reader)
            case 8 where key == "priority": priority = try Self.integer(&reader)
            case 8 where key == "sequence": sequence = try Self.integer(&reader)
            case 9 where key == "eventTime": eventTime = try Self.string(&reader)
            case 10 where key == "activityId": activityId = try Self.string(&reader)
            case 6 where key == "alerts":
                if case .bool(let flag) = try reader.value(depth: 1) { alerts = .value(flag) } else { alerts = .mistyped }
            case 10 where key == "isTerminal":
                if case .bool(let flag) = try reader.value(depth: 1) { isTerminal = .value(flag) } else { isTerminal = .mistyped }
            case 10 where key == "expiration":
                switch try reader.value(depth: 1) {
                case .integer(let seconds): expiration = .value(seconds)
                case .null: expiration = .value(nil)
                default: expiration = .mistyped
                }
            case 14 where key == "attributesType": attributesType = try Self.string(&reader)
            default:
                _ = try reader.value(depth: 1)  // apnsTopic is derived; unknown keys are ignored.
            }
        }

        static func string(_ reader: inout JSONReader, depth: Int = 1) throws -> Member<String> {
            try reader.stringIfString(depth: depth).map(Member.value) ?? .mistyped
        }

        private static func integer(_ reader: inout JSONReader) throws -> Member<Int64> {
            guard case .integer(let number) = try reader.value(depth: 1) else { return .mistyped }
            return .value(number)
        }

        static func invalid(_ key: String, _ problem: String) -> FormatError {
            FormatError(description: "\(key) \(problem)")
        }

        /// The member's value, or the error that names it.
        static func value<Value>(_ member: Member<Value>, _ key: String, _ problem: String) throws(FormatError) -> Value {
            switch member {
            case .value(let value): return value
            case .mistyped: throw invalid(key, problem)
            case .absent: throw FormatError(description: "missing \(key)")
            }
        }

        static func string(_ member: Member<String>, _ key: String) throws(FormatError) -> String {
            try value(member, key, "is not a string")
        }

        static func integer(_ member: Member<Int64>, _ key: String) throws(FormatError) -> Int64 {
            try value(member, key, "is not an integer")
        }

        static func bool(_ member: Member<Bool>, _ key: String) throws(FormatError) -> Bool {
            try value(member, key, "is not a boolean")
        }

        /// A boolean that is false when absent.
        static func optionalBool(_ member: Member<Bool>, _ key: String) throws(FormatError) -> Bool {
            if case .absent = member { return false }
            return try bool(member, key)
        }

        func pushTarget() throws(FormatError) -> PushTarget {
            guard sawTarget else { throw FormatError(description: "missing target") }
            if let device {
                guard let kind = PushTarget.DeviceTokenKind(rawValue: try Self.string(device.kind, "target.device.kind")) else {
                    throw Self.invalid("target.device.kind", "is not update or pushToStart")
                }
                let environment: APNsEnvironment
                if case .absent = device.environment {
                    environment = .production
                } else {
                    guard let named = APNsEnvironment(rawValue: try Self.string(device.environment, "target.device.environment"))
                    else { throw Self.invalid("target.device.environment", "is not production or sandbox") }
                    environment = named
                }
                return .device(token: try Self.string(device.token, "target.device.token"), kind: kind, environment: environment)
            }
            if let channel {
                return .channel(key: try Self.string(channel.key, "target.channel.key"))
            }
            throw FormatError(description: "target has neither device nor channel")
        }
    }
}
