import ArgumentParser
import Foundation
import LivelineBenchSupport

// Tests: scripts/bench-smoke

/// `liveline-bench trickle-floor`: what this machine charges the same unit of work when it
/// comes after a pause, against back to back (``TrickleFloor``). No broker, no Liveline
/// process: the figure to read a worker's CPU per event at a steady rate against.
struct TrickleFloorBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trickle-floor",
        abstract: "Time one unit of work back to back and after pauses, for a few working-set sizes.",
        discussion: """
            A worker at a steady rate sleeps between batches (the translator lingers 10 ms). \
            On a machine that loses a sleeping thread's caches, each batch starts cold and \
            costs more CPU than in a drain, whatever the code. This prints that factor: the CPU \
            time of a walk through a working set after each pause, over the same walks run \
            back to back beside it, in alternating rounds.
            """
    )

    @Option(
        help: "Working sets to walk, in KiB, comma-separated (default 32,256,1024).",
        transform: { try TrickleFloorBenchmark.list($0, name: "--working-sets", range: 4...1_048_576, unit: "KiB") })
    var workingSets: [Int] = [32, 256, 1024]
    @Option(
        help: "Pauses before each walk, in ms, comma-separated (default 1,5,10), each against back to back.",
        transform: { try TrickleFloorBenchmark.list($0, name: "--gaps", range: 1...1_000, unit: "ms") })
    var gaps: [Int] = [1, 5, 10]
    @Option(help: "Walks timed per run.") var units = 200
    @Option(help: "Cache lines visited per walk.") var steps = 20_000
    @Option(help: "Rounds; every other one runs in the reverse order.") var rounds = 2
    @Flag(help: "Also spin on the clock for each pause instead of sleeping: time passes, the core never idles.")
    var spin = false
    @Flag(help: "Print the runs and the summary as JSON.") var json = false

    mutating func validate() throws {
        guard (10...100_000).contains(units) else { throw ValidationError("--units must be 10 to 100000, not \(units)") }
        guard (1...100_000_000).contains(steps) else { throw ValidationError("--steps must be 1 to 100000000, not \(steps)") }
        guard (1...20).contains(rounds) else { throw ValidationError("--rounds must be 1 to 20, not \(rounds)") }
    }

    func run() throws {
        let waits: [TrickleFloor.Wait] = spin ? [.sleep, .spin] : [.sleep]
        var settings: [TrickleFloor.Setting] = []
        for size in workingSets {
            for wait in waits {
                settings += gaps.map { TrickleFloor.Setting(workingSetKiB: size, wait: wait, gapMilliseconds: $0) }
            }
        }
        let walks = Dictionary(uniqueKeysWithValues: workingSets.map { ($0, CacheWalk(workingSetKiB: $0)) })
        // With --json, standard output is the report alone; the lines go to standard error.
        let json = json
        let report: (String) -> Void = { line in
            if json { Progress.line(line) } else { print(line) }
        }
        report("trickle-floor: \(steps) steps a walk, \(units) walks a run; µs of this thread's CPU a walk, its median "
            + "(and p90), against the same walks back to back just before or after")

        var runs: [Run] = []
        for round in 1...rounds {
            report("round \(round)")
            // Each paused run has a back-to-back run beside it: this machine's speed drifts
            // within seconds (other tenants), so a reference taken once a round misleads.
            let reversed = round.isMultiple(of: 2)
            for setting in reversed ? settings.reversed() : settings {
                let walk = walks[setting.workingSetKiB]!
                let backToBackSetting = TrickleFloor.Setting(workingSetKiB: setting.workingSetKiB, wait: .none, gapMilliseconds: 0)
                var paused: [Double] = []
                var backToBack: [Double] = []
                for measured in reversed ? [setting, backToBackSetting] : [backToBackSetting, setting] {
                    let costs = TrickleFloor.measure(walk, steps: steps, units: units, setting: measured)
                    if measured.wait == .none { backToBack = costs } else { paused = costs }
                }
                let median = TrickleFloor.percentile(paused, 0.5)
                let reference = TrickleFloor.percentile(backToBack, 0.5)
                let run = Run(
                    round: round, setting: setting, medianMicroseconds: median,
                    p90Microseconds: TrickleFloor.percentile(paused, 0.9), backToBackMicroseconds: reference,
                    timesBackToBack: median / reference)
                runs.append(run)
                report("  " + Self.describe(run))
            }
        }
        let summary = settings.map { setting in Summary(setting: setting, runs: runs.filter { $0.setting == setting }) }
        if json {
            try printJSON(Report(steps: steps, units: units, runs: runs, summary: summary))
            return
        }
        print("summary, over \(rounds) round(s): the median walk after the pause, back to back, and their ratio")
        for line in summary { print("  " + Self.describe(line)) }
    }

    struct Run: Codable {
        var round: Int
        var setting: TrickleFloor.Setting
        var medianMicroseconds: Double
        var p90Microseconds: Double
        /// The median of the same walks back to back, run beside this one.
        var backToBackMicroseconds: Double
        var timesBackToBack: Double
    }

    struct Range: Codable {
        var min: Double
        var max: Double

        init(_ values: [Double]) {
            min = values.min() ?? 0
            max = values.max() ?? 0
        }

        /// One figure when both ends print alike, else "low–high".
        func text(_ format: String) -> String {
            let (low, high) = (String(format: format, min), String(format: format, max))
            return low == high ? low : low + "–" + high
        }
    }

    struct Summary: Codable {
        var setting: TrickleFloor.Setting
        var medianMicroseconds: Range
        var backToBackMicroseconds: Range
        var timesBackToBack: Range

        init(setting: TrickleFloor.Setting, runs: [Run]) {
            self.setting = setting
            medianMicroseconds = Range(runs.map(\.medianMicroseconds))
            backToBackMicroseconds = Range(runs.map(\.backToBackMicroseconds))
            timesBackToBack = Range(runs.map(\.timesBackToBack))
        }
    }

    struct Report: Codable {
        var steps: Int
        var units: Int
        var runs: [Run]
        var summary: [Summary]
    }

    static func describe(_ setting: TrickleFloor.Setting) -> String {
        let wait = switch setting.wait {
        case .none: "back to back"
        case .sleep: "sleep \(setting.gapMilliseconds) ms"
        case .spin: "spin \(setting.gapMilliseconds) ms"
        }
        return "\(setting.workingSetKiB) KiB".padding(toLength: 12, withPad: " ", startingAt: 0)
            + wait.padding(toLength: 16, withPad: " ", startingAt: 0)
    }

    static func describe(_ run: Run) -> String {
        describe(run.setting)
            + String(
                format: "%8.1f µs (p90 %.1f), back to back %.1f µs: %.2f×", run.medianMicroseconds, run.p90Microseconds,
                run.backToBackMicroseconds, run.timesBackToBack)
    }

    static func describe(_ summary: Summary) -> String {
        describe(summary.setting) + summary.medianMicroseconds.text("%.1f") + " µs, back to back "
            + summary.backToBackMicroseconds.text("%.1f") + " µs: " + summary.timesBackToBack.text("%.2f") + "×"
    }

    /// A comma-separated list of whole numbers, each in `range`, without repeats.
    static func list(_ text: String, name: String, range: ClosedRange<Int>, unit: String) throws -> [Int] {
        let fields = text.split(separator: ",", omittingEmptySubsequences: false)
        let values = fields.compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !values.isEmpty, values.count == fields.count, values.allSatisfy(range.contains), Set(values).count == values.count
        else {
            throw ValidationError(
                "\(name) must be comma-separated whole numbers (\(unit)) from \(range.lowerBound) to \(range.upperBound), "
                    + "without repeats, not \(text)")
        }
        return values
    }
}
