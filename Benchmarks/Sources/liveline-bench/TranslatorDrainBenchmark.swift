import ArgumentParser
import Foundation
import LivelineAMQP
import LivelineBenchSupport
import LivelineMessaging
import LivelineServices
import Logging

// Tests: scripts/bench-smoke

/// `liveline-bench translator`: the shipped `liveline translator` process draining a full
/// translate queue (the ride, delivery and score mix, published before it starts) into the
/// send queue, with no sender running. It prints the rate from the translator's start, the
/// CPU per event of the translator and the broker, the translator's memory as it drains and
/// at its peak, and where a batch's time goes, phase by phase, from the translator's own
/// `/metrics`. Every event must be counted as translated, dropped or dead-lettered, and every
/// job it published must sit in the send queue.
struct TranslatorDrainBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "translator",
        abstract: "Fill liveline.translate with N events, then time `liveline translator` draining them.",
        discussion: "scripts/bench translator starts RabbitMQ (and PostgreSQL with --postgres) and runs this on a release build."
    )

    @OptionGroup var workers: WorkerOptions
    @Option(help: "Store URL the translator uses (default: a fresh SQLite file).") var storeURL: String?
    @Option(help: "Events to queue.") var events = 100_000
    @Option(help: "Activities the events go round-robin over, one device each.") var activities = 10_000
    @Option(help: "Seconds to wait for the drain.") var drainTimeout = 600
    @Flag(help: "Print the summary as JSON.") var json = false

    mutating func validate() throws {
        guard activities >= 1, events >= activities else { throw ValidationError("--events must be at least --activities (≥ 1)") }
        guard drainTimeout >= 1 else { throw ValidationError("--drain-timeout must be at least 1 (seconds)") }
    }

    func run() async throws {
        // No push leaves: the simulator is only there for the translator's settings, in this process.
        let passed = try await Pipeline.with(
            executable: workers.liveline, amqpURL: workers.amqpURL, storeURL: storeURL, label: "translator",
            simulator: .inProcess, passed: { $0 }, measure)
        if !passed { throw ExitCode.failure }
    }

    private func measure(_ pipeline: Pipeline) async throws -> Bool {
        let load = Load(activities: activities, total: events, rate: 0)
        try await load.registerDevices(in: pipeline)
        Progress.line("translator: queueing \(events) events over \(activities) activities")
        _ = try await load.publish(amqpURL: workers.amqpURL, progress: Progress(total: events, what: "queued"))

        let meter = UsageMeter(broker: BrokerUsage())
        let before = meter.sample(pipeline)
        let started = ContinuousClock.now
        let translator = try await pipeline.startWorker("translator")
        // Every 100 ms: the translator renders its whole /metrics for each look, which every
        // 20 ms cost it 0.6 % of its CPU in a profile. It counts an event once the batch's
        // jobs are confirmed in the send queue.
        let drain = try await QueueDrain(
            total: events, what: "events taken", every: max(1, events / 10), timeout: drainTimeout, pause: .milliseconds(100)
        ).wait(for: translator, from: started, timedOut: { "the translator took \($0) of \(events) events within \(drainTimeout) s; see its log" }) {
            Int(try await translator.metrics(["liveline_translator_events_received_total"])[0])
        }
        let after = meter.sample(pipeline)
        let counts = try await translator.metrics([
            "liveline_translator_events_translated_total", "liveline_translator_events_dropped_total",
            "liveline_translator_events_dead_lettered_total", "liveline_translator_jobs_published_total",
        ]).map { Int($0) }
        let phaseNames = TranslatorPhase.allCases.map(\.rawValue)
        let phaseSums = try await translator.metrics(phaseNames.map { "liveline_translator_phase_duration_seconds_sum{phase=\"\($0)\"" })
        let phases = zip(phaseNames, phaseSums).map { Summary.Phase(name: $0, microsecondsPerEvent: $1 / Double(events) * 1e6) }
        var logger = Logger(label: "bench.translator")
        logger.logLevel = .error
        let connection = try await AMQPConnection.connect(try AMQPConfiguration(url: workers.amqpURL), logger: logger)
        defer { Task { await connection.close() } }
        let inSendQueue = try await Load.takeWaitingJobs(LivelineTopology(), on: connection)
        let summary = Summary(
            store: pipeline.storeURL.hasPrefix("sqlite:") ? "SQLite" : "PostgreSQL", events: events, activities: activities,
            seconds: drain.seconds, eventsPerSecond: Double(events) / drain.seconds, translated: counts[0], dropped: counts[1],
            deadLettered: counts[2], jobsPublished: counts[3], jobsInSendQueue: inSendQueue,
            processes: meter.usage(before: before, after: after, events: events),
            samples: drain.samples.map { .init(events: $0.done, rssMiB: $0.rssMiB) }, phases: phases)
        if json {
            try printJSON(summary)
        } else {
            print(summary.text)
        }
        return summary.passed
    }

    struct MemorySample: Codable, Sendable {
        var events: Int
        var rssMiB: Double
    }

    struct Summary: Codable, Sendable {
        struct Phase: Codable, Sendable {
            var name: String
            /// Wall time of the phase, summed over the batches, per event.
            var microsecondsPerEvent: Double
        }

        var store: String
        var events: Int
        var activities: Int
        var seconds: Double
        var eventsPerSecond: Double
        var translated: Int
        var dropped: Int
        var deadLettered: Int
        var jobsPublished: Int
        var jobsInSendQueue: Int
        var processes: [UsageMeter.Usage]
        var samples: [MemorySample]
        var phases: [Phase]

        /// Every event accounted for, and every job it published waiting for a sender.
        var passed: Bool { translated + dropped + deadLettered == events && jobsInSendQueue == jobsPublished }

        var text: String {
            var lines = [
                "translator: \(events) events over \(activities) activities drained by one `liveline translator` (\(store))",
                String(format: "  rate: %.0f events/s (%.2f s)", eventsPerSecond, seconds),
                "  events: \(translated) translated, \(dropped) dropped by rule, \(deadLettered) dead-lettered; "
                    + "\(jobsPublished) jobs published, \(jobsInSendQueue) in the send queue"
                    + (passed ? "" : "  <- NOT ACCOUNTED FOR"),
                "  process                       cpu s   µs/event   peak RSS    RSS now",
            ]
            lines += processes.map(\.row)
            lines.append("  translator RSS as it drained: "
                + samples.map { String(format: "%d: %.1f MiB", $0.events, $0.rssMiB) }.joined(separator: ", "))
            lines.append("  batch phases, wall µs per event: "
                + phases.map { String(format: "%@ %.1f", $0.name, $0.microsecondsPerEvent) }.joined(separator: ", "))
            return lines.joined(separator: "\n")
        }
    }
}
