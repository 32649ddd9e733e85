import Foundation
import LivelineStore

// Tests: Tests/LivelineRuntimeTests/OnCallOutputTests.swift

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

    /// The header line: how many lines, over what time, and how many older ones were left out.
    /// `filters` describes `--kind` and `--device` as given (`kind apns-outcome, device 80a1b2c3`).
    public static func header(activityID: String, tail: TraceTail, filters: String? = nil) -> String {
        guard let first = tail.lines.first?.entry.at, let last = tail.lines.last?.entry.at else {
            if let filters { return "no line of the trace of \(activityID) matches \(filters)" }
            return "no trace for activity \(activityID) (unknown, or older than the trace retention)"
        }
        let name = filters.map { "\(activityID) (\($0))" } ?? activityID
        let span = "\(OnCallFormat.time(first)) to \(OnCallFormat.time(last))"
        guard tail.leftOut > 0 else { return "trace of \(name): \(ReplayProgress.grouped(tail.lines.count)) line(s), \(span)" }
        return "trace of \(name): the newest \(ReplayProgress.grouped(tail.lines.count)) of \(ReplayProgress.grouped(tail.matching)) "
            + "line(s), \(span); \(ReplayProgress.grouped(tail.leftOut)) older line(s) left out (--tail N shows more)"
    }

    /// The first object of `--json`, before the lines: `{"summary": {"activityId": "g-1",
    /// "leftOut": 99000, "matching": 100000, "shown": 1000}}`. Its own key keeps it apart from
    /// the lines, which all have `sequence`.
    public static func jsonSummary(activityID: String, tail: TraceTail) throws -> String {
        struct Summary: Encodable {
            var activityId: String
            var leftOut: Int
            var matching: Int
            var shown: Int
        }
        struct Document: Encodable { var summary: Summary }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(Document(summary: Summary(
            activityId: activityID, leftOut: tail.leftOut, matching: tail.matching, shown: tail.lines.count))), as: UTF8.self)
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
