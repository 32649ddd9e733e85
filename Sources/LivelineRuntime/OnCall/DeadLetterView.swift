import Foundation
import LivelineCodecs
import LivelineCore
import LivelineStore

// Tests: Tests/LivelineRuntimeTests/OnCallOutputTests.swift

/// A dead letter as `liveline dlq list --json` and `show --json` write it. The body is in
/// `show` only; device tokens appear as a prefix.
///
/// ```json
/// {"id": "…", "reason": "BadDeviceToken", "source": "sender", "message": "…",
///  "domain": "ride", "activityId": "r-1", "eventId": "e-1", "jobId": "…", "kind": "job",
///  "attempts": 1, "firstFailedAt": "2026-11-23T10:00:00.120Z", "lastFailedAt": "…",
///  "keptAt": "…", "state": "pending", "resolution": {"outcome": "replayed", "at": "…", "count": 1},
///  "deaths": [{"queue": "liveline.send", "reason": "delivery_limit", "count": 1,
///              "exchange": "liveline.push", "routingKeys": ["ride.update"], "time": "…"}],
///  "body": {…}}
/// ```
public struct DeadLetterView: Encodable, Sendable {
    public struct Death: Encodable, Sendable {
        var queue, reason, exchange: String
        var count: Int64
        var routingKeys: [String]
        var time: String?
    }

    public struct Resolution: Encodable, Sendable {
        var outcome: String
        var at: String
        var count: Int
    }

    var id, reason, source, message, kind, state, firstFailedAt, lastFailedAt, keptAt: String
    var domain, activityId, eventId, jobId: String?
    var attempts: Int
    var resolution: Resolution?
    var deaths: [Death]
    var body: JSONValue?

    public init(_ letter: DeadLetterRecord, withBody: Bool) {
        id = letter.id
        reason = letter.reason
        source = letter.source.rawValue
        message = letter.message
        kind = letter.payloadKind.rawValue
        state = letter.state.rawValue
        firstFailedAt = Self.time(letter.firstFailedAt)
        lastFailedAt = Self.time(letter.lastFailedAt)
        keptAt = Self.time(letter.keptAt)
        domain = letter.domain
        activityId = letter.activityID
        eventId = letter.eventID
        jobId = letter.jobID
        attempts = letter.attempts
        resolution = letter.resolution.map { .init(outcome: $0.outcome, at: Self.time($0.at), count: $0.count) }
        deaths = letter.deaths.map {
            Death(queue: $0.queue, reason: $0.reason, exchange: $0.exchange, count: $0.count, routingKeys: $0.routingKeys,
                  time: $0.time.map(Self.time))
        }
        body = withBody ? OnCallFormat.body(of: letter) : nil
    }

    static func time(_ date: Date) -> String {
        RFC3339.format(EventTime(millisecondsSince1970: date.millisecondsSince1970))
    }
}

/// The activity as `dlq show` reports it beside a letter.
public struct ActivityView: Encodable, Sendable {
    public struct Device: Encodable, Sendable {
        var deviceId: String
        /// The token's first 8 characters.
        var token: String
        var registeredAt: String
    }

    var id, status, domain, userId: String
    var lastEventAt, lastEventId, endedAt, endReason: String?
    var devices: [Device]

    public init(_ activity: ActivityRecord, devices: [UpdateToken]) {
        id = activity.id
        status = activity.status.rawValue
        domain = activity.domain
        userId = activity.userID
        lastEventAt = activity.lastEventAt.map(DeadLetterView.time)
        lastEventId = activity.lastEventID
        endedAt = activity.endedAt.map(DeadLetterView.time)
        endReason = activity.endReason
        self.devices = devices.map {
            Device(deviceId: $0.deviceID, token: OnCallFormat.token($0.token), registeredAt: DeadLetterView.time($0.registeredAt))
        }
    }
}

/// `liveline dlq list`: the table, newest first, then the counts per reason.
public enum DeadLetterListing {
    public static func text(_ letters: [DeadLetterRecord], counts: [String: Int]) -> String {
        let rows = letters.map { letter in
            [
                OnCallFormat.time(letter.lastFailedAt), letter.id, letter.reason, letter.source.rawValue,
                letter.domain ?? "-", letter.activityID ?? "-", "\(letter.attempts)", letter.state.rawValue,
            ]
        }
        var lines: [String] = []
        if rows.isEmpty {
            lines.append("no dead letters match")
        } else {
            lines.append(OnCallFormat.table(
                ["LAST FAILED (UTC)", "ID", "REASON", "SOURCE", "DOMAIN", "ACTIVITY", "ATTEMPTS", "STATE"], rows))
        }
        let total = counts.values.reduce(0, +)
        lines.append("")
        lines.append("\(total) matching letter(s)\(total > letters.count ? ", \(letters.count) shown (--limit)" : "")")
        for (reason, count) in counts.sorted(by: { ($1.value, $0.key) < ($0.value, $1.key) }) {
            lines.append("  \(reason): \(count)")
        }
        return lines.joined(separator: "\n")
    }

    /// `{"letters": [DeadLetterView without body], "counts": {"reason": n}, "total": n}`.
    public static func json(_ letters: [DeadLetterRecord], counts: [String: Int]) throws -> String {
        struct Listing: Encodable {
            var letters: [DeadLetterView]
            var counts: [String: Int]
            var total: Int
        }
        return try OnCallFormat.json(Listing(
            letters: letters.map { DeadLetterView($0, withBody: false) }, counts: counts,
            total: counts.values.reduce(0, +)))
    }
}

/// `liveline dlq show`: every field of one letter, its broker history, its body, and the
/// activity as the store has it now.
public enum DeadLetterDetail {
    public static func text(_ letter: DeadLetterRecord, activity: ActivityRecord?, devices: [UpdateToken]) -> String {
        var lines = ["dead letter \(letter.id)"]
        func field(_ name: String, _ value: String?) {
            lines.append("  " + name.padding(toLength: 14, withPad: " ", startingAt: 0) + (value ?? "-"))
        }
        field("reason", "\(letter.reason) (from the \(letter.source.rawValue))")
        field("message", letter.message)
        field("domain", letter.domain)
        field("activity", letter.activityID)
        field("event", letter.eventID)
        field("job", letter.jobID)
        field("kind", letter.payloadKind.rawValue)
        field("attempts", "\(letter.attempts)")
        field("first failed", OnCallFormat.time(letter.firstFailedAt))
        field("last failed", OnCallFormat.time(letter.lastFailedAt))
        field("kept", OnCallFormat.time(letter.keptAt))
        field("state", letter.resolution.map { "\($0.outcome) at \(OnCallFormat.time($0.at)) (\($0.count)×)" } ?? "pending")
        if letter.deaths.isEmpty {
            field("x-death", "none (not moved by the broker)")
        } else {
            field("x-death", "")
            for death in letter.deaths {
                lines.append("    \(death.reason) in \(death.queue) ×\(death.count)"
                    + (death.time.map { " at \(OnCallFormat.time($0))" } ?? "")
                    + " (exchange \(death.exchange.isEmpty ? "default" : death.exchange), keys \(death.routingKeys.joined(separator: ",")))")
            }
        }
        lines.append("  original \(letter.payloadKind == .job ? "job" : letter.payloadKind == .event ? "event" : "message"):")
        lines.append(contentsOf: OnCallFormat.pretty(OnCallFormat.body(of: letter)).split(separator: "\n").map { "    " + $0 })
        lines.append("")
        guard let activity else {
            lines.append(letter.activityID.map { "activity \($0): not in the store" } ?? "no activity")
            return lines.joined(separator: "\n")
        }
        lines.append("activity \(activity.id) now")
        field("status", activity.status.rawValue
            + (activity.endedAt.map { " (ended \(OnCallFormat.time($0)), \(activity.endReason ?? "no reason"))" } ?? ""))
        field("domain", activity.domain)
        field("user", activity.userID)
        field("last event", activity.lastEventAt.map { "\(OnCallFormat.time($0)) (\(activity.lastEventID ?? "?"))" })
        if devices.isEmpty {
            field("devices", "none registered")
        } else {
            field("devices", "")
            for device in devices {
                lines.append("    \(device.deviceID)  \(OnCallFormat.token(device.token))  registered \(OnCallFormat.time(device.registeredAt))")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// `{"letter": DeadLetterView with body, "activity": ActivityView or null}`.
    public static func json(_ letter: DeadLetterRecord, activity: ActivityRecord?, devices: [UpdateToken]) throws -> String {
        struct Detail: Encodable {
            var letter: DeadLetterView
            var activity: ActivityView?
        }
        return try OnCallFormat.json(Detail(
            letter: DeadLetterView(letter, withBody: true), activity: activity.map { ActivityView($0, devices: devices) }))
    }
}
