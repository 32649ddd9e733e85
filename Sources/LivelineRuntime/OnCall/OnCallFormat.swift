import Foundation
import LivelineCodecs
import LivelineCore
import LivelineStore

// Tests: Tests/LivelineRuntimeTests/OnCallOutputTests.swift

/// How on-call output writes times, tokens and bodies: UTC with milliseconds, device tokens
/// as an 8-character prefix, never a secret.
public enum OnCallFormat {
    /// `2026-11-23 10:00:00.120Z`: sortable, and the same for every on-call engineer's zone.
    public static func time(_ date: Date) -> String {
        RFC3339.format(EventTime(millisecondsSince1970: date.millisecondsSince1970))
            .replacingOccurrences(of: "T", with: " ")
    }

    /// `+1.250s` or `+2m05.000s` after `start`.
    public static func offset(_ date: Date, from start: Date) -> String {
        let ms = max(0, date.millisecondsSince1970 - start.millisecondsSince1970)
        let minutes = ms / 60_000
        let seconds = Double(ms % 60_000) / 1000
        return minutes > 0 ? String(format: "+%lldm%06.3fs", minutes, seconds) : String(format: "+%.3fs", seconds)
    }

    /// A device token as its first 8 characters.
    public static func token(_ token: String) -> String { "\(token.prefix(8))…" }

    /// Rows as columns padded to their widest cell, two spaces apart.
    public static func table(_ header: [String], _ rows: [[String]]) -> String {
        var widths = header.map(\.count)
        for row in rows {
            for (index, cell) in row.enumerated() where index < widths.count { widths[index] = max(widths[index], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                index == cells.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
        return ([line(header)] + rows.map(line)).joined(separator: "\n")
    }

    /// JSON for tools: sorted keys, so output is stable.
    public static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// A letter's body as people may see it: a job with its device token cut to a prefix and
    /// its payload decoded; an event as it was; anything else as text, shortened.
    public static func body(of letter: DeadLetterRecord) -> JSONValue {
        if letter.payloadKind == .job, let job = try? PushJob(json: letter.body) {
            var fields: [String: JSONValue] = [
                "jobId": .string(job.jobId), "apnsId": .string(job.apnsId.uuidString.lowercased()),
                "activityId": .string(job.activityId), "domain": .string(job.domain), "eventId": .string(job.eventId),
                "eventTime": .string(RFC3339.format(job.eventTime)), "event": .string(job.event.rawValue),
                "priority": .integer(Int64(job.priority.rawValue)), "bundleId": .string(job.bundleId),
                "target": .string(job.target.logDescription), "sequence": .integer(job.sequence),
            ]
            if let expiration = job.expiration { fields["expiration"] = .integer(expiration) }
            fields["payload"] = (try? JSONValue.parse(job.payload)) ?? .string("(\(job.payload.count) unreadable bytes)")
            return .object(fields)
        }
        if let value = try? JSONValue.parse(letter.body) { return value }
        let text = String(decoding: letter.body.prefix(2048), as: UTF8.self)
        return .string(letter.body.count > 2048 ? text + "… (\(letter.body.count) bytes)" : text)
    }

    /// `value` as indented JSON text with sorted keys.
    public static func pretty(_ value: JSONValue) -> String {
        (try? json(value)) ?? "\(value)"
    }
}
