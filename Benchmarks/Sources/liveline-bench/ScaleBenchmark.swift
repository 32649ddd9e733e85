import ArgumentParser
import Foundation
import LivelineAMQP
import LivelineBenchSupport
import LivelineMessaging

// Tests: scripts/scale-demo

/// `liveline-bench scale`: horizontal scaling on one machine. Runs several `liveline
/// translator` and `liveline sender` processes on one PostgreSQL store and one broker,
/// feeds them a steady stream of ride, delivery and score updates, and checks with the loss
/// ledger that every event arrived once at the APNs simulator or was dropped by a
/// documented rule (coalesced, stale), and that each device applies its activity's updates
/// in order (``OrderCheck``). Prints each worker's share of the work and the totals.
struct ScaleBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scale",
        abstract: "Run N translators and M senders on PostgreSQL against one broker and check what reached APNs.",
        discussion: "scripts/scale-demo starts RabbitMQ and PostgreSQL on loopback and runs this."
    )

    @OptionGroup var workers: WorkerOptions
    @Option(help: "PostgreSQL URL (the store every worker shares).") var storeURL: String
    @Option(help: "Translator processes.") var translators = 2
    @Option(help: "Sender processes.") var senders = 2
    @Option(help: "Shards of each stage (liveline.translate.shards and liveline.send.shards).") var shards = 8
    @Option(help: "Activities, one device each.") var activities = 200
    @Option(help: "Events per activity.") var eventsPerActivity = 10
    @Option(help: "Events per second, across every activity.") var rate = 400
    @Option(help: "Seconds to wait for the last pushes after publishing.") var drainTimeout = 60
    @Flag(help: "Print the summary as JSON.") var json = false

    mutating func validate() throws {
        guard translators >= 1, senders >= 1 else { throw ValidationError("--translators and --senders must be at least 1") }
        guard (1...LivelineTopology.maximumShards).contains(shards) else {
            throw ValidationError("--shards must be 1 to \(LivelineTopology.maximumShards), not \(shards)")
        }
        guard activities >= 1, eventsPerActivity >= 1, rate >= 1 else {
            throw ValidationError("--activities, --events-per-activity and --rate must be at least 1")
        }
        guard storeURL.hasPrefix("postgres://") || storeURL.hasPrefix("postgresql://") else {
            throw ValidationError("--store-url must be a postgres:// URL: the workers share one store")
        }
    }

    func run() async throws {
        let summary = try await Pipeline.with(
            executable: workers.liveline, amqpURL: workers.amqpURL, storeURL: storeURL, label: "scale",
            settings: ["LIVELINE_TRANSLATE_SHARDS": "\(shards)", "LIVELINE_SEND_SHARDS": "\(shards)"], passed: \.passed, measure)
        if json {
            try printJSON(summary)
        } else {
            print(summary.text)
        }
        if !summary.passed { throw ExitCode.failure }
    }

    private func measure(_ pipeline: Pipeline) async throws -> Summary {
        let total = activities * eventsPerActivity
        let load = Load(activities: activities, total: total, rate: rate)
        try await load.registerDevices(in: pipeline)
        let apnsIDs = load.apnsIDs()
        for _ in 0..<translators { try await pipeline.startWorker("translator") }
        for _ in 0..<senders { try await pipeline.startWorker("sender") }
        Progress.line("scale: \(translators) translator(s) and \(senders) sender(s) ready; logs in \(pipeline.work.path)")

        let started = Date().timeIntervalSince1970
        let publishedAt = try await load.publish(
            amqpURL: workers.amqpURL, topology: pipeline.topology, progress: Progress(total: total, what: "published"))
        let publishSeconds = Date().timeIntervalSince1970 - started
        try await Drain.wait(for: pipeline, load: load, timeout: .seconds(drainTimeout))

        // The workers count a batch once its acks and confirms are done: settle before the shares.
        var shares: [WorkerShare] = []
        let settle = ContinuousClock.now + .seconds(5)
        repeat {
            shares = try await pipeline.workers.asyncMap { try await WorkerShare.of($0) }
            let taken = shares.filter { $0.role == "translator" }.reduce(0) { $0 + $1.work }
            let pushed = shares.filter { $0.role == "sender" }.reduce(0) { $0 + $1.work }
            if taken >= total && pushed >= pipeline.simulator.deliveredDeviceCount { break }
            try await Task.sleep(for: .milliseconds(200))
        } while ContinuousClock.now < settle

        // A graceful stop flushes the workers' traces, which the ledger reads.
        let killed = await pipeline.stopWorkers()
        if !killed.isEmpty { throw BenchError(killed.map(\.notStopped).joined(separator: "; ")) }
        let outcome = try await Outcome.collect(
            pipeline: pipeline, load: load, publishedAt: publishedAt, apnsIDs: apnsIDs, duplicateBound: 0)
        return Summary(
            translators: translators, senders: senders, shards: shards,
            brokers: (try? AMQPConfiguration(url: workers.amqpURL))?.brokers.count ?? 1, activities: activities, events: total,
            publishSeconds: publishSeconds, elapsedSeconds: outcome.lastReceipt - started, workers: shares,
            order: OrderCheck(of: load, at: pipeline.simulator, apnsIDs: apnsIDs), ledger: outcome.ledger.verdict())
    }
}

/// One worker's part of the run, from its `/metrics` and procfs.
struct WorkerShare: Codable, Sendable {
    var name: String
    var role: String
    /// Events taken (translator) or pushes delivered (sender).
    var work: Int
    var cpuSeconds: Double?
    var peakRSSMiB: Double?

    static func of(_ worker: Worker) async throws -> WorkerShare {
        let metric = worker.role == "translator"
            ? "liveline_translator_events_received_total" : #"liveline_sender_pushes_total{outcome="delivered""#
        let usage = ProcessUsage.of(pid: worker.pid)
        return WorkerShare(
            name: worker.name, role: worker.role, work: Int(try await worker.metrics([metric])[0]),
            cpuSeconds: usage?.cpuSeconds, peakRSSMiB: usage?.peakRSSMiB)
    }
}

struct Summary: Codable, Sendable {
    var translators: Int
    var senders: Int
    var shards: Int
    var brokers: Int
    var activities: Int
    var events: Int
    var publishSeconds: Double
    var elapsedSeconds: Double
    var workers: [WorkerShare]
    var order: OrderCheck
    var ledger: Verdict

    var passed: Bool { ledger.passed && order.passed }

    var text: String {
        var lines = [
            "scale: \(translators) translator(s), \(senders) sender(s), \(shards) shards per stage, "
                + (brokers == 1 ? "1 broker" : "a cluster of \(brokers) brokers") + ", PostgreSQL; "
                + "\(events) events over \(activities) activities, published in \(String(format: "%.1f", publishSeconds)) s",
            "",
            "worker        work      share   cpu s   peak RSS",
        ]
        for role in ["translator", "sender"] {
            let group = workers.filter { $0.role == role }
            let sum = max(1, group.reduce(0) { $0 + $1.work })
            for worker in group {
                lines.append(
                    worker.name.padding(toLength: 12, withPad: " ", startingAt: 0)
                        + String(format: "%6d %8.1f %%  %6.1f   %6.1f MiB", worker.work, 100 * Double(worker.work) / Double(sum),
                                 worker.cpuSeconds ?? 0, worker.peakRSSMiB ?? 0))
            }
            let what = role == "translator" ? "events taken" : "pushes delivered"
            lines.append("  \(role)s: \(group.reduce(0) { $0 + $1.work }) \(what)")
        }
        lines += [
            "",
            ledger.text,
            order.text,
            String(format: "throughput: %.0f events/s end to end (%.1f s from the first publish to the last push)",
                   Double(events) / max(elapsedSeconds, 0.001), elapsedSeconds),
            passed
                ? "PASS: every event arrived once or was dropped by a documented rule, and in order at every device"
                : "FAIL",
        ]
        return lines.joined(separator: "\n")
    }
}

extension Array where Element: Sendable {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
