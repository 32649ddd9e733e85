import ArgumentParser
import Foundation
import LivelineAMQP
import LivelineBenchSupport
import LivelineMessaging
import Logging
import Synchronization

// Tests: scripts/bench-smoke

/// `liveline-bench e2e`: the whole path as people run it. A producer publishes the ride,
/// delivery and score mix with confirms; `liveline translator` and `liveline sender` run as
/// processes of their own on a real broker and store; the APNs simulator receives. Prints
/// the sustained rate, the latency from publish to the simulator's receipt, each process's
/// CPU and memory (the broker's included), and the loss ledger, which must pass.
struct E2EBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "e2e",
        abstract: "Publish → translator → sender → APNs simulator, with workers as processes; figures and the loss ledger.",
        discussion: "scripts/bench e2e starts RabbitMQ (and PostgreSQL with --postgres) and runs this on a release build."
    )

    @OptionGroup var workers: WorkerOptions
    @Option(help: "Store URL the workers share (default: a fresh SQLite file).") var storeURL: String?
    @Option(help: "Translator processes.") var translators = 1
    @Option(help: "Sender processes.") var senders = 1
    @Option(help: "Shards of each stage (liveline.translate.shards and liveline.send.shards).") var shards = 1
    @Option(help: "Activities, one device each; events go round-robin over them.") var activities = 1_000
    @Option(help: "Events to publish.") var events = 100_000
    @Option(help: "Events per second; 0 publishes flat out.") var rate = 0
    @Option(help: "At a rate, publish this many events at once every burst/rate seconds, instead of each as it falls due.")
    var burst: Int?
    @Flag(help: "Publish everything first, then start the workers and measure the drain.") var backlog = false
    @Option(help: "Seconds to wait for the last pushes.") var drainTimeout = 600
    @Option(help: "The soak: sample every process's memory this often (seconds), and print latency and memory per window.")
    var windowSeconds: Int?
    @Option(help: "Where the APNs simulator runs: process (liveline apns-sim, as APNs is another machine) or in-process.")
    var simulator: SimulatorPlacement = .process
    @Option(help: "Name of the scenario in the markdown table.") var scenario: String?
    @Option(help: "Append the figures as a markdown table row to this file.") var markdown: String?
    @Flag(help: "Print the summary as JSON.") var json = false
    @Flag(help: "Publish every event's outcomes (liveline.outcomes.domains=*) into a queue this process drains.")
    var outcomes = false

    mutating func validate() throws {
        guard translators >= 1, senders >= 1 else { throw ValidationError("--translators and --senders must be at least 1") }
        guard (1...LivelineTopology.maximumShards).contains(shards) else {
            throw ValidationError("--shards must be 1 to \(LivelineTopology.maximumShards), not \(shards)")
        }
        guard activities >= 1, events >= activities else { throw ValidationError("--events must be at least --activities (≥ 1)") }
        guard rate >= 0 else { throw ValidationError("--rate must be 0 (flat out) or more") }
        if let burst, burst < 1 || burst > 200 || rate == 0 {
            throw ValidationError("--burst must be 1-200, with a --rate")
        }
        if let windowSeconds, windowSeconds < 1 || backlog {
            throw ValidationError("--window-seconds must be at least 1, and a soak publishes as it goes (no --backlog)")
        }
    }

    func run() async throws {
        let passed = try await Pipeline.with(
            executable: workers.liveline, amqpURL: workers.amqpURL, storeURL: storeURL, label: "e2e", simulator: simulator,
            settings: ["LIVELINE_TRANSLATE_SHARDS": "\(shards)", "LIVELINE_SEND_SHARDS": "\(shards)",
                       "LIVELINE_OUTCOMES_DOMAINS": outcomes ? "*" : ""],
            passed: { $0 }, measure)
        if !passed { throw ExitCode.failure }
    }

    /// Runs the load and prints the figures; true when the ledger passed.
    private func measure(_ pipeline: Pipeline) async throws -> Bool {
        let load = Load(activities: activities, total: events, rate: rate, burst: burst)
        try await load.registerDevices(in: pipeline)
        let apnsIDs = load.apnsIDs()

        let drain = outcomes ? try await OutcomeDrain.start(amqpURL: workers.amqpURL, topology: pipeline.topology) : nil
        let meter = UsageMeter(broker: BrokerUsage())
        if !backlog { try await startWorkers(pipeline) }
        var before = meter.sample(pipeline)
        var started = Date().timeIntervalSince1970
        Progress.line("e2e: publishing \(events) events over \(activities) activities "
            + (rate == 0 ? "flat out" : "at \(rate)/s") + (backlog ? " before the workers start" : ""))
        let memory = MemorySamples()
        let sampling = windowSeconds.map { seconds in
            Task { try await memory.sample(every: .seconds(seconds), pipeline: pipeline, meter: meter) }
        }
        defer { sampling?.cancel() }
        let publishedAt = try await load.publish(
            amqpURL: workers.amqpURL, topology: pipeline.topology, progress: Progress(total: events, what: "published"))
        var publishing: [UsageMeter.Usage]?
        if backlog {
            // With no worker running yet, what the broker spent is the producer's part.
            publishing = meter.usage(before: before, after: meter.sample(pipeline), events: events)
                .filter { $0.name.hasPrefix("broker") || $0.name.hasPrefix("bench") }
            try await startWorkers(pipeline)
            before = meter.sample(pipeline)
            started = Date().timeIntervalSince1970
        }
        try await Drain.wait(for: pipeline, load: load, timeout: .seconds(drainTimeout))
        let after = meter.sample(pipeline)
        // The last memory sample while the workers still run: later ones would miss them.
        sampling?.cancel()
        if sampling != nil { memory.record(after) }
        let stages = try await Stage.means(of: pipeline.workers)
        let outcomesReceived = await drain?.stop()
        // A graceful stop flushes the workers' traces, which the ledger reads.
        let killed = await pipeline.stopWorkers()
        if !killed.isEmpty { throw BenchError(killed.map(\.notStopped).joined(separator: "; ")) }

        let outcome = try await Outcome.collect(
            pipeline: pipeline, load: load, publishedAt: publishedAt, apnsIDs: apnsIDs, duplicateBound: 0)
        let verdict = outcome.ledger.verdict()
        let seconds = max(outcome.lastReceipt - started, 0.001)
        let summary = Summary(
            scenario: scenario ?? (backlog ? "backlog" : rate == 0 ? "flat out" : "\(rate)/s" + (burst.map { ", bursts of \($0)" } ?? "")),
            store: pipeline.storeURL.hasPrefix("sqlite:") ? "SQLite" : "PostgreSQL",
            translators: translators, senders: senders, shards: shards, events: events, activities: activities, rate: rate, burst: burst,
            seconds: seconds, eventsPerSecond: Double(events) / seconds, pushesPerSecond: Double(outcome.pushes) / seconds,
            p50: outcome.latency(0.5), p99: outcome.latency(0.99), p999: outcome.latency(0.999),
            processes: meter.usage(before: before, after: after, events: events), stages: stages,
            publishing: publishing,
            windows: windowSeconds.map { SoakWindow.windows(of: $0, from: started, publishedAt: publishedAt, outcome: outcome, memory: memory) },
            ledger: verdict, outcomes: outcomesReceived)
        if json {
            try printJSON(summary)
        } else {
            print(summary.text)
        }
        if let markdown { try summary.appendRow(to: markdown) }
        return verdict.passed
    }

    private func startWorkers(_ pipeline: Pipeline) async throws {
        for _ in 0..<translators { try await pipeline.startWorker("translator") }
        for _ in 0..<senders { try await pipeline.startWorker("sender") }
        Progress.line("e2e: \(translators) translator(s) and \(senders) sender(s) ready; logs in \(pipeline.work.path)")
    }

    struct Summary: Codable, Sendable {
        var scenario: String
        var store: String
        var translators: Int
        var senders: Int
        var shards: Int
        var events: Int
        var activities: Int
        var rate: Int
        /// Events per publish at the rate; nil: each as it fell due.
        var burst: Int?
        var seconds: Double
        var eventsPerSecond: Double
        var pushesPerSecond: Double
        var p50: Double
        var p99: Double
        var p999: Double
        var processes: [UsageMeter.Usage]
        var stages: [Stage]
        /// The soak's windows, with `--window-seconds`.
        /// With `--backlog`: the broker's and the producer's CPU while the events were
        /// published, before any worker ran (the rows above cover the drain).
        var publishing: [UsageMeter.Usage]?
        var windows: [SoakWindow]?
        var ledger: Verdict
        /// With `--outcomes`: the outcomes the drain received.
        var outcomes: Int?

        var text: String {
            var lines = [
                "e2e (\(scenario)): \(translators) translator(s), \(senders) sender(s), \(shards) shard(s) per stage, \(store); "
                    + "\(events) events over "
                    + "\(activities) activities, " + (rate == 0 ? "flat out" : "\(rate)/s")
                    + (burst.map { " in bursts of \($0)" } ?? ""),
                String(format: "  sustained: %.0f events/s, %.0f pushes/s (%.1f s to the last push)", eventsPerSecond, pushesPerSecond, seconds)
                    + (outcomes.map { ", \($0) outcomes received" } ?? ""),
                String(format: "  latency, publish to APNs receipt: p50 %.1f ms, p99 %.1f ms, p99.9 %.1f ms", p50, p99, p999),
                "  process                       cpu s   µs/event   peak RSS    RSS now",
            ]
            lines += processes.map(\.row)
            lines.append("  stages, mean from the workers' histograms: " + stages.map(\.text).joined(separator: ", "))
            if let publishing {
                lines.append("  while publishing, before the workers started: " + publishing.map {
                    String(format: "%@ %.1f µs/event", $0.name, $0.microsecondsPerEvent)
                }.joined(separator: ", "))
            }
            if let windows { lines += SoakWindow.text(windows) }
            lines.append(ledger.text)
            return lines.joined(separator: "\n")
        }

        /// One row per run; the header is written when the file is new. CPU is summed per
        /// role; memory is the largest worker's peak, and the broker's resident size now
        /// (its peak counts every run since it started).
        func appendRow(to path: String) throws {
            func cpu(_ prefixes: String...) -> String {
                let matching = processes.filter { process in prefixes.contains { process.name.hasPrefix($0) } }
                return String(format: "%.0f", matching.reduce(0) { $0 + $1.microsecondsPerEvent })
            }
            func peak(_ prefix: String) -> String {
                String(format: "%.0f", processes.filter { $0.name.hasPrefix(prefix) }.map(\.peakRSSMiB).max() ?? 0)
            }
            let broker = String(format: "%.0f", processes.filter { $0.name.hasPrefix("broker") }.reduce(0) { $0 + $1.rssMiB })
            var text = ""
            if !FileManager.default.fileExists(atPath: path) {
                text += "| scenario | store | T | S | events | events/s | pushes/s | p50 ms | p99 ms | p99.9 ms "
                    + "| CPU µs/event: translators / senders / broker / producer+simulator "
                    + "| RSS MiB: translator / sender peak, broker now | lost |\n"
                text += "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
            }
            text += String(
                format: "| %@ | %@ | %d | %d | %d | %.0f | %.0f | %.1f | %.1f | %.1f | %@ / %@ / %@ / %@ | %@ / %@ / %@ | %d |\n",
                scenario, store, translators, senders, events, eventsPerSecond, pushesPerSecond, p50, p99, p999,
                cpu("translator"), cpu("sender"), cpu("broker"), cpu("bench", "apns-sim"), peak("translator"), peak("sender"), broker,
                ledger.lost.count)
            if let handle = FileHandle(forWritingAtPath: path) {
                handle.seekToEndOfFile()
                handle.write(Data(text.utf8))
                try handle.close()
            } else {
                try text.write(toFile: path, atomically: true, encoding: .utf8)
            }
        }
    }
}

/// Waits until the pipeline has done its work: every event pushed to the simulator
/// (duplicates not counted) or counted by the workers as dropped, dead-lettered or
/// answered 410 (the device gone), no
/// message waiting in the translate, send or retry queues, and nothing changing for a
/// second. (A count alone can be reached early: an event both delivered and, its answer
/// lost to a reset, dropped on the retry counts twice.) A worker killed by a fault takes
/// its counts along, so the queues empty and twenty seconds without change also end the wait
/// (longer than any outage a fault case stages):
/// the ledger then checks every event. With a progress bar.
///
/// The workers' counts can run ahead of the truth: a batch done twice (its ack lost to a
/// broker cut) counts its drops twice, and a queue's count leaves out what a cut-off consumer
/// still holds unacked. So a caller that can say how many events are not yet accounted for
/// (`unaccounted`, the ledger's own reckoning) is asked before the wait ends on the counts.
enum Drain {
    static func wait(
        for pipeline: Pipeline, load: Load, timeout: Duration, unaccounted: (() async throws -> Int)? = nil
    ) async throws {
        var logger = Logger(label: "bench.drain")
        logger.logLevel = .critical
        let connection = try await AMQPConnection.connect(try AMQPConfiguration(url: pipeline.amqpURL), logger: logger)
        defer { Task { await connection.close() } }
        let topology = pipeline.topology
        let queues = topology.translateQueues + topology.sendQueues + topology.retryTiers.map(topology.retryQueue)
        let progress = Progress(total: load.total, what: "delivered, dropped or dead-lettered")
        let deadline = ContinuousClock.now + timeout
        var previous: [Int] = []
        var unchanged = 0
        let tokens = (0..<load.activities).map(load.events.token)
        while ContinuousClock.now < deadline {
            let delivered = try await pipeline.receiver.receipts(toDevices: tokens).reduce(0) { sum, receipts in
                sum + Set(receipts.map(\.apnsID)).count
            }
            var otherwise = 0
            for worker in pipeline.workers where worker.process.isRunning {
                let counts = try? await worker.metrics(worker.role == "translator"
                    ? ["liveline_translator_events_dropped_total", "liveline_translator_events_dead_lettered_total"]
                    : ["liveline_sender_dropped_total", "liveline_sender_dead_letters_total",
                       #"liveline_sender_pushes_total{outcome="unregistered""#])
                otherwise += Int((counts ?? []).reduce(0, +))
            }
            var waiting = 0
            for queue in queues { waiting += (try? await connection.messageCount(queue: queue)) ?? 1 }
            progress.update(min(delivered + otherwise, load.total))
            let now = [delivered, otherwise]
            unchanged = waiting == 0 && now == previous ? unchanged + 1 : 0
            if delivered + otherwise >= load.total, unchanged > 0 {
                // A store that cannot be read yet (an outage case) leaves the question open.
                let missing = unaccounted == nil ? 0 : (try? await unaccounted?()) ?? 1
                if missing == 0 {
                    Progress.line("drain: \(delivered) delivered, \(otherwise) dropped or dead-lettered by the running workers")
                    return
                }
                if unchanged == 1 {
                    Progress.line("drain: the counts are complete but \(missing) event(s) are not accounted for yet; waiting")
                }
            }
            if unchanged >= 20 {
                Progress.line("drain: settled with \(delivered) delivered and \(otherwise) dropped or dead-lettered by the running "
                    + "workers; the ledger accounts for the other \(load.total - delivered - otherwise)")
                return
            }
            previous = now
            try await Task.sleep(for: .seconds(1))
        }
        Progress.line("drain: not everything was accounted for within \(timeout); the ledger says what is missing")
    }
}

/// Where an event's time goes, from the workers' own histograms (their means: sum / count
/// over every worker of a role).
struct Stage: Codable, Sendable {
    var name: String
    var milliseconds: Double

    var text: String { String(format: "%@ %.1f ms", name, milliseconds) }

    static let measured: [(name: String, role: String, metric: String)] = [
        ("translate queue wait", "translator", "liveline_translator_queue_wait_seconds"),
        ("translator batch", "translator", "liveline_translator_batch_duration_seconds"),
        ("send queue wait", "sender", "liveline_sender_queue_wait_seconds"),
        ("APNs send", "sender", "liveline_sender_send_duration_seconds"),
        ("event time to APNs answer", "sender", "liveline_e2e_latency_seconds"),
    ]

    static func means(of workers: [Worker]) async throws -> [Stage] {
        var stages: [Stage] = []
        for stage in measured {
            var sum = 0.0, count = 0.0
            for worker in workers where worker.role == stage.role && worker.process.isRunning {
                let values = try await worker.metrics([stage.metric + "_sum", stage.metric + "_count"])
                sum += values[0]
                count += values[1]
            }
            if count > 0 { stages.append(Stage(name: stage.name, milliseconds: sum / count * 1000)) }
        }
        return stages
    }
}

/// CPU and memory of the workers, the broker and this process (producer and simulator).
struct UsageMeter: Sendable {
    let broker: BrokerUsage?

    struct Usage: Codable, Sendable {
        var name: String
        var cpuSeconds: Double
        var microsecondsPerEvent: Double
        var peakRSSMiB: Double
        var rssMiB: Double

        /// A row under "process  cpu s  µs/event  peak RSS  RSS now".
        var row: String {
            "  " + name.padding(toLength: 28, withPad: " ", startingAt: 0)
                + String(format: "%6.1f  %9.1f  %6.1f MiB  %6.1f MiB", cpuSeconds, microsecondsPerEvent, peakRSSMiB, rssMiB)
        }
    }

    /// Each worker, the broker, `liveline apns-sim` when it runs as a process, and this one.
    func sample(_ pipeline: Pipeline) -> [String: ProcessUsage.Snapshot] {
        var samples: [String: ProcessUsage.Snapshot] = [:]
        for worker in pipeline.workers { samples[worker.name] = ProcessUsage.of(pid: worker.pid) }
        samples.merge(broker?.snapshots() ?? [:]) { $1 }
        if let simulator = pipeline.simulatorProcess {
            samples["apns-sim"] = ProcessUsage.of(pid: simulator.pid)
            samples["bench (producer)"] = ProcessUsage.of(pid: getpid())
        } else {
            samples["bench (producer, simulator)"] = ProcessUsage.of(pid: getpid())
        }
        return samples
    }

    func usage(before: [String: ProcessUsage.Snapshot], after: [String: ProcessUsage.Snapshot], events: Int) -> [Usage] {
        after.keys.sorted { Self.order($0) < Self.order($1) }.compactMap { name in
            guard let end = after[name] else { return nil }
            let cpu = end.cpuSeconds - (before[name]?.cpuSeconds ?? 0)
            return Usage(name: name, cpuSeconds: cpu, microsecondsPerEvent: cpu / Double(max(events, 1)) * 1e6,
                         peakRSSMiB: end.peakRSSMiB, rssMiB: end.rssMiB)
        }
    }

    /// Translators, senders, the broker, the simulator, then this process.
    private static func order(_ name: String) -> String {
        name.hasPrefix("translator") ? "0" + name : name.hasPrefix("sender") ? "1" + name
            : name.hasPrefix("broker") ? "2" + name : name == "apns-sim" ? "3" : "4"
    }
}

/// Every process's memory, sampled as the soak goes.
final class MemorySamples: Sendable {
    private let samples = Mutex<[(at: Double, usage: [String: ProcessUsage.Snapshot])]>([])

    func sample(every interval: Duration, pipeline: Pipeline, meter: UsageMeter) async throws {
        while true {
            try await Task.sleep(for: interval)
            record(meter.sample(pipeline))
        }
    }

    func record(_ usage: [String: ProcessUsage.Snapshot]) {
        samples.withLock { $0.append((Date().timeIntervalSince1970, usage)) }
    }

    /// Resident MiB of each process at the first sample at or after `time` (else the last).
    func rss(at time: Double) -> [String: Double] {
        samples.withLock { samples in
            (samples.first { $0.at >= time } ?? samples.last)?.usage.mapValues(\.rssMiB) ?? [:]
        }
    }
}

/// One window of the soak: the latency of the events published in it, and every process's
/// memory at its end. Flat figures from window to window are what the soak shows.
struct SoakWindow: Codable, Sendable {
    var startSecond: Int
    var events: Int
    var delivered: Int
    var p50: Double
    var p99: Double
    var p999: Double
    var rssMiB: [String: Double]

    static func windows(
        of seconds: Int, from start: Double, publishedAt: [Double], outcome: Outcome, memory: MemorySamples
    ) -> [SoakWindow] {
        var latencies: [Int: [Double]] = [:]
        var events: [Int: Int] = [:]
        for (index, published) in publishedAt.enumerated() {
            let window = max(0, Int((published - start) / Double(seconds)))
            events[window, default: 0] += 1
            if let latency = outcome.latencyByEvent[index] { latencies[window, default: []].append(latency) }
        }
        return events.keys.sorted().map { window in
            let sorted = (latencies[window] ?? []).sorted()
            return SoakWindow(
                startSecond: window * seconds, events: events[window] ?? 0, delivered: sorted.count,
                p50: Outcome.quantile(0.5, ofSorted: sorted), p99: Outcome.quantile(0.99, ofSorted: sorted),
                p999: Outcome.quantile(0.999, ofSorted: sorted),
                rssMiB: memory.rss(at: start + Double((window + 1) * seconds)))
        }
    }

    static func text(_ windows: [SoakWindow]) -> [String] {
        let names = Set(windows.flatMap(\.rssMiB.keys)).filter { !$0.hasPrefix("bench") && $0 != "apns-sim" }.sorted()
        var lines = ["  soak, per window of publishing: latency of its events; each process's RSS (MiB) at its end",
                     "  from s    events  delivered   p50 ms   p99 ms  p99.9 ms  " + names.joined(separator: "  ")]
        for window in windows {
            lines.append(
                String(format: "  %6d  %8d  %9d  %7.1f  %7.1f  %8.1f  ", window.startSecond, window.events, window.delivered,
                       window.p50, window.p99, window.p999)
                    + names.map { String(format: "%\($0.count).1f", window.rssMiB[$0] ?? 0) }.joined(separator: "  "))
        }
        // After the first window (warm-up): how far each figure moved, low to high.
        let settled = windows.dropFirst()
        if settled.count >= 2 {
            func range(_ values: [Double]) -> String { String(format: "%.1f–%.1f", values.min() ?? 0, values.max() ?? 0) }
            lines.append("  after the first window: p99 " + range(settled.map(\.p99)) + " ms; RSS "
                + names.map { name in "\(name) " + range(settled.map { $0.rssMiB[name] ?? 0 }) }.joined(separator: ", ") + " MiB")
        }
        return lines
    }
}
