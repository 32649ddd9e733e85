import Foundation
import LivelineStore

/// `liveline trace`: an activity's story in order, with absolute (UTC) and relative times.
public enum TraceTimeline {
    /// The label of each kind of line in the timeline.
    static func label(_ kind: TraceEntry.Kind) -> String {
        switch kind {
        case .eventReceived: "event"
        case .pushDecided: "decided"
        case .apnsOutcome: "apns"
        case .dropped: "dropped"
        case .deadLettered: "dead-letter"
        case .retried: "retry"
        case .replayed: "replay"
        }
    }

    /// The header line for an activity's trace.
    public static func header(activityID: String, lines: [TraceLine]) -> String {
        guard let first = lines.first?.entry.at, let last = lines.last?.entry.at else {
            return "no trace for activity \(activityID) (unknown, or older than the trace retention)"
        }
        return "trace of \(activityID): \(lines.count) line(s), \(OnCallFormat.time(first)) to \(OnCallFormat.time(last))"
    }

    /// One line: absolute time, time since `start`, kind, detail.
    public static func text(_ line: TraceLine, start: Date) -> String {
        let kind = label(line.entry.kind).padding(toLength: 11, withPad: " ", startingAt: 0)
        return "\(OnCallFormat.time(line.entry.at))  \(OnCallFormat.offset(line.entry.at, from: start).padding(toLength: 10, withPad: " ", startingAt: 0))  \(kind)  \(line.entry.detail)"
    }

    /// One JSON object per line (JSON Lines), so `--follow --json` streams:
    /// `{"sequence": 12, "activityId": "r-1", "at": "2026-11-23T10:00:00.120Z", "kind": "apns-outcome", "detail": "…"}`.
    public static func json(_ line: TraceLine) throws -> String {
        struct Line: Encodable {
            var sequence: Int64
            var activityId: String
            var at: String
            var kind: String
            var detail: String
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(Line(
            sequence: line.sequence, activityId: line.entry.activityID, at: DeadLetterView.time(line.entry.at),
            kind: line.entry.kind.rawValue, detail: line.entry.detail)), as: UTF8.self)
    }
}
