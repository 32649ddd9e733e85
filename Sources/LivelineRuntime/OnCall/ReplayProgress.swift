import Foundation
import LivelineServices
import Synchronization

// Tests: Tests/LivelineRuntimeTests/OnCallOutputTests.swift

/// What `liveline dlq replay` shows while it runs: on a terminal a progress bar with the rate
/// and the time left on standard error; otherwise (and in a dry run) one plain line per
/// letter on standard output; with `--json`, nothing until one document at the end
/// (``document(steps:_:)``).
public final class ReplayProgress: Sendable {
    private struct State {
        var done = 0
        var lastDraw = ContinuousClock.now
        /// Kept for `--json`, which writes one document at the end.
        var steps: [DeadLetterReplay.Step] = []
    }

    private let total: Int
    private let json: Bool
    private let verbose: Bool
    private let bar: Bool
    private let started = ContinuousClock.now
    private let state = Mutex(State())

    /// - Parameters:
    ///   - verbose: a line per letter even on a terminal (a dry run says what it would do).
    public init(total: Int, json: Bool, verbose: Bool, terminal: Bool = isatty(STDERR_FILENO) == 1) {
        self.total = max(1, total)
        self.json = json
        self.verbose = verbose
        self.bar = terminal && !json && !verbose
    }

    /// Reports one batch of steps.
    public func record(_ steps: [DeadLetterReplay.Step]) {
        let (done, draw) = state.withLock { state -> (Int, Bool) in
            state.done += steps.count
            if json { state.steps += steps }
            let now = ContinuousClock.now
            let draw = now - state.lastDraw > .milliseconds(100) || state.done >= total
            if draw { state.lastDraw = now }
            return (state.done, draw)
        }
        if json { return }
        if !bar {
            for step in steps { print(Self.line(step)) }
        } else if draw {
            FileHandle.standardError.write(Data(("\r" + Self.bar(done: done, total: total, elapsed: ContinuousClock.now - started)).utf8))
        }
    }

    /// Ends the progress bar's line; returns the steps kept for `--json`.
    public func finish() -> [DeadLetterReplay.Step] {
        if bar { FileHandle.standardError.write(Data("\n".utf8)) }
        return state.withLock { $0.steps }
    }

    /// `replay --json`: `{"steps": [{"id", "reason", "activityID", "action", "detail"}], "summary":
    /// {"replayed", "skipped": {"reason": n}, "failed", "dryRun"}}`.
    public static func document(steps: [DeadLetterReplay.Step], _ summary: DeadLetterReplay.Summary) throws -> String {
        struct Document: Encodable {
            var steps: [DeadLetterReplay.Step]
            var summary: DeadLetterReplay.Summary
        }
        return try OnCallFormat.json(Document(steps: steps, summary: summary))
    }

    /// `replayed <id> (<reason>, activity r-1): update to update token ab12cd34…, as it was`.
    public static func line(_ step: DeadLetterReplay.Step) -> String {
        "\(step.action) \(step.id) (\(step.reason), activity \(step.activityID ?? "-")): \(step.detail)"
    }

    /// `[##########----------]  5,000/10,000  2,150/s  ETA 2s`.
    public static func bar(done: Int, total: Int, elapsed: Duration) -> String {
        let width = 30
        let filled = min(width, done * width / max(1, total))
        let seconds = max(0.001, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        let rate = Double(done) / seconds
        let left = rate > 0 ? Int((Double(max(0, total - done)) / rate).rounded(.up)) : 0
        return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "]  "
            + "\(grouped(done))/\(grouped(total))  \(grouped(Int(rate)))/s  ETA \(left)s"
    }

    /// `replayed 12, skipped 3 (ended 2, superseded 1), failed 0`, with `would` in a dry run.
    public static func summaryText(_ summary: DeadLetterReplay.Summary) -> String {
        let skipped = summary.skipped.values.reduce(0, +)
        let reasons = summary.skipped.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        let verb = summary.dryRun ? "dry run, nothing changed: would replay" : "replayed"
        return "\(verb) \(summary.replayed), \(summary.dryRun ? "would skip" : "skipped") \(skipped)"
            + (reasons.isEmpty ? "" : " (\(reasons))") + ", failed \(summary.failed)"
    }

    static func grouped(_ value: Int) -> String {
        let digits = String(value)
        var result = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { result.append(",") }
            result.append(digit)
        }
        return result
    }
}
