import ArgumentParser
import Foundation
import LivelineAMQP
import LivelineBenchSupport
import LivelineCore
import LivelineMessaging
import LivelineProducer
import LivelineServices
import LivelineStore
import Logging
import Metrics
import PostgresNIO
import Prometheus
import ServiceLifecycle

// Tests: scripts/bench-smoke

/// `translator-bench` (later `liveline-bench translator`): fills a translate queue, runs one
/// `TranslatorService` against it, and prints events/s from the first consume until every
/// job is confirmed in the send queue, with the time per batch phase and the peak RSS.
@main
struct TranslatorBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "translator-bench",
        abstract: "Measure the translator: events in, push jobs confirmed out.")

    @Option(help: "Events to translate.") var events = 100_000
    @Option(help: "Activities the events are spread over (each gets one update token).") var activities = 10_000
    @Option(help: "Largest batch.") var batch = TranslatorSettings().maxBatchSize
    @Option(help: "Consumer prefetch.") var prefetch: UInt16 = TranslatorSettings().prefetch
    @Option(help: "Tasks a batch's parsing is split over.") var parseConcurrency = TranslatorSettings().parseConcurrency
    @Option(help: "AMQP URL.") var amqpURL = ProcessInfo.processInfo.environment["LIVELINE_AMQP_URL"]
        ?? "amqp://guest:guest@127.0.0.1:5672/%2f"
    @Option(help: "Also run against PostgreSQL at this URL (a throwaway schema is created).") var postgresURL: String?
    @Flag(name: .customLong("skip-sqlite"), help: "Skip the SQLite run.") var skipSQLite = false
    @Option(help: "Where the translator's metrics go: breakdown (summed here, for the phase table), prometheus (the registry `liveline translator` serves on /metrics), or off.")
    var metrics = MetricsBackend.breakdown

    enum MetricsBackend: String, ExpressibleByArgument, Sendable {
        case breakdown, prometheus, off
    }

    /// The plain ids: each measurement runs on a fresh store.
    private var bench: BenchEvents { BenchEvents() }

    func run() async throws {
        var logger = Logger(label: "translator-bench")
        logger.logLevel = .warning
        print("translator: \(events) events over \(activities) activities, batch \(batch), prefetch \(prefetch)")
        try coreCost()
        if !skipSQLite {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("translator-bench-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let store = try SQLiteLivelineStore(configuration: .init(path: directory.appendingPathComponent("bench.sqlite").path))
            try await measure("sqlite", store: store, logger: logger)
        }
        if let postgresURL {
            let schema = "translator_bench_\(UInt32.random(in: 0...UInt32.max))"
            var configuration = try PostgresStoreConfiguration(url: postgresURL)
            configuration.schema = schema
            let client = PostgresClient(configuration: configuration.clientConfiguration)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await client.run() }
                try await client.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA \(schema)"))
                let store = PostgresLivelineStore(client: client, logger: logger)
                try await store.migrate()
                try await measure("postgres", store: store, logger: logger)
                try await client.query(PostgresQuery(unsafeSQL: "DROP SCHEMA \(schema) CASCADE"))
                group.cancelAll()
            }
        }
        print(String(format: "peak RSS (VmHWM): %.1f MiB", ProcessUsage.peakRSSMebibytes()))
    }

    private func measure(_ name: String, store: any ActivityStore, logger: Logger) async throws {
        let topology = LivelineTopology(prefix: "bench.translator.\(UUID().uuidString.prefix(8).lowercased())", retryTiers: [])

        let amqp = try AMQPConfiguration(url: amqpURL)
        let control = try await AMQPConnection.connect(amqp, logger: logger)
        try await control.declare(topology.amqp)

        // Seed: every activity has an update token, as when the apps registered first.
        let clock = ContinuousClock()
        var started = clock.now
        let translator = Translator(configuration: BenchEvents.translatorConfiguration())
        for activity in 0..<activities {
            let domain = BenchEvents.domain(of: activity)
            _ = try await store.registerUpdateToken(UpdateTokenRegistration(
                activityID: bench.activityId(activity), deviceID: "phone", userID: bench.userId(activity),
                token: bench.token(activity), domain: domain,
                attributesType: translator.attributesType(ofDomain: domain), at: Date()))
        }
        print("  [\(name)] seeded \(activities) tokens in \(Self.seconds(clock.now - started)) s")

        started = clock.now
        let publisher = EventPublisher(connection: control, source: "//bench.liveline", topology: topology)
        let base = Date().addingTimeInterval(-3_600)
        for chunk in stride(from: 0, to: events, by: 5_000) {
            let slice = try (chunk..<min(chunk + 5_000, events)).map {
                try bench.event($0, activities: activities, base: base)
            }
            try await publisher.publish(contentsOf: slice)
        }
        let fill = Self.seconds(clock.now - started)
        print(String(format: "  [\(name)] filled %d events in %.2f s (%.0f/s publish+confirm)", events, fill, Double(events) / fill))

        let metrics = BenchMetrics()
        let factory: any MetricsFactory = switch self.metrics {
        case .breakdown: metrics
        case .prometheus: PrometheusMetricsFactory(registry: PrometheusCollectorRegistry())
        case .off: NOOPMetricsHandler.instance
        }
        let consumer = try await AMQPConnection.connect(amqp, logger: logger)
        let jobPublisher = try await AMQPConnection.connect(amqp, logger: logger)
        let service = TranslatorService(
            consumer: consumer, publisher: jobPublisher, store: store, translator: translator, topology: topology,
            // One job a message, so the send queue's count is the jobs confirmed.
            settings: TranslatorSettings(
                prefetch: prefetch, maxBatchSize: batch, parseConcurrency: parseConcurrency, jobsPerMessage: 1),
            logger: logger, metricsFactory: factory)
        let group = ServiceGroup(configuration: .init(services: [.init(service: service)], logger: logger))

        let cpuStarted = ProcessUsage.cpuSeconds()
        let broker = BrokerUsage()
        let brokerStarted = broker?.cpuSeconds() ?? 0
        let elapsed = try await withThrowingTaskGroup(of: Void.self) { tasks in
            started = clock.now
            tasks.addTask { try await group.run() }
            // An event yields one job, unless a rule drops it (an update superseded in its batch,
            // when an activity has several in one) or it is dead-lettered. So the run ends when
            // every event has its job, or when the translate queue is empty and no job has come
            // for three seconds; it ends at the last job, and the report accounts for the rest.
            var jobs = 0
            var lastJob = clock.now
            let deadline = clock.now + .seconds(600)
            while jobs < events, clock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                let confirmed = try await control.messageCount(queue: topology.sendQueues[0])
                if confirmed != jobs {
                    (jobs, lastJob) = (confirmed, clock.now)
                } else if clock.now - lastJob > .seconds(3),
                    try await control.messageCount(queue: topology.translateQueues[0]) == 0
                {
                    break
                }
            }
            let elapsed = lastJob - started
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            return elapsed
        }
        await consumer.close()
        await jobPublisher.close()
        let left = try await control.messageCount(queue: topology.translateQueues[0])
        let jobs = try await control.messageCount(queue: topology.sendQueues[0])
        let dead = try await control.messageCount(queue: topology.deadQueue)
        try report(name, elapsed: elapsed, jobs: jobs, left: left, dead: dead, metrics: metrics)
        let cpu = ProcessUsage.cpuSeconds() - cpuStarted
        print(String(format: "  [\(name)] CPU of this process: %.2f s, %.1f µs per event, %.2f cores",
                     cpu, cpu / Double(events) * 1e6, cpu / Self.seconds(elapsed)))
        if let broker {
            let brokerCPU = broker.cpuSeconds() - brokerStarted
            print(String(format: "  [\(name)] CPU of the local broker meanwhile: %.2f s, %.1f µs per event, %.2f cores",
                         brokerCPU, brokerCPU / Double(events) * 1e6, brokerCPU / Self.seconds(elapsed)))
        }

        for queue in [topology.translateQueues[0], topology.sendQueues[0], topology.deadQueue] { try? await control.delete(queue: queue) }
        for exchange in [topology.eventsExchange, topology.pushExchange, topology.retryExchange, topology.deadExchange] {
            try? await control.delete(exchange: exchange)
        }
        await control.close()
    }

    /// The pure core's cost per event on one thread, no I/O: how much of the budget the
    /// translation itself takes before any broker or store work.
    private func coreCost() throws {
        let translator = Translator(configuration: BenchEvents.translatorConfiguration())
        let sample = min(events, 10_000)
        let base = Date().addingTimeInterval(-3_600)
        let bodies = try (0..<sample).map { try bench.event($0, activities: activities, base: base).encoded(source: "//bench") }
        let clock = ContinuousClock()
        var started = clock.now
        var parsed: [DomainEvent] = []
        for body in bodies { parsed.append(try translator.parse(body)) }
        let parse = Self.seconds(clock.now - started)
        started = clock.now
        var jobs = 0
        for event in parsed {
            let decision = translator.translate(
                event: event, activity: nil, tokens: TokenSnapshot(updateTokens: [bench.token(0)]),
                preferences: UserPreferences(), budget: .empty, now: Date())
            if case .send(let send) = decision { jobs += send.jobs.count }
        }
        let translate = Self.seconds(clock.now - started)
        var bytes = 0
        var encode = 0.0, decode = 0.0
        for event in parsed.prefix(1) {
            if case .send(let send) = translator.translate(
                event: event, activity: nil, tokens: TokenSnapshot(updateTokens: [bench.token(0)]),
                preferences: UserPreferences(), budget: .empty, now: Date()), let job = send.jobs.first {
                started = clock.now
                for _ in 0..<sample { bytes += job.encoded().count }
                encode = Self.seconds(clock.now - started)
                // What the sender does with each job it takes off the queue.
                let json = job.encoded()
                started = clock.now
                for _ in 0..<sample { bytes += try PushJob(json: json).payload.count }
                decode = Self.seconds(clock.now - started)
            }
        }
        print(String(format: "  core, one thread, no I/O (%d events): parse %.1f µs/event, translate %.1f µs/event, "
                     + "job JSON %.1f µs/job, reading it back %.1f µs/job",
                     sample, parse / Double(sample) * 1e6, translate / Double(sample) * 1e6, encode / Double(sample) * 1e6,
                     decode / Double(sample) * 1e6))
        _ = (jobs, bytes)
    }

    private func report(_ name: String, elapsed: Duration, jobs: Int, left: Int, dead: Int, metrics: BenchMetrics) throws {
        let seconds = Self.seconds(elapsed)
        print(String(format: "  [\(name)] translated %d events -> %d jobs in %.2f s: %.0f events/s", events, jobs, seconds, Double(events) / seconds))
        print("  [\(name)] left in translate queue: \(left), dead letters: \(dead)")
        let batches = metrics.total("liveline_translator_batch_duration_seconds")
        if batches.count > 0 {
            let latency = Double(batches.sum) / 1e9 / Double(batches.count)
            let phases = TranslatorPhase.allCases.map {
                Double(metrics.total("liveline_translator_phase_duration_seconds", [("phase", $0.rawValue)]).sum) / 1e9
            }
            let busy = phases.reduce(0, +)
            print(String(format: "  [\(name)] %d batches, avg %.1f events, avg latency %.2f ms (dequeue to ack)",
                         batches.count, Double(events) / Double(batches.count), latency * 1000))
            print(String(format: "  [\(name)] phase time (consecutive batches' phases overlap): %.2f s of %.2f s wall", busy, seconds))
            for phase in TranslatorPhase.allCases {
                let total = metrics.total("liveline_translator_phase_duration_seconds", [("phase", phase.rawValue)])
                let phaseSeconds = Double(total.sum) / 1e9
                let label = phase.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0)
                print("    " + label + String(format: "%6.2f s  %5.1f%%  (%.2f ms/batch)", phaseSeconds,
                             phaseSeconds / max(busy, 1e-9) * 100, phaseSeconds * 1000 / Double(max(total.count, 1))))
            }
        }
        let dropped = metrics.all(prefix: "liveline_translator_events_dropped")
        for (key, sum, _) in dropped + metrics.all(prefix: "liveline_translator_events_dead") {
            print("  [\(name)] \(key): \(sum)")
        }
        // Only the breakdown counts the drops; the other metrics modes go to a registry or nowhere.
        guard self.metrics == .breakdown else { return }
        let accounted = jobs + dead + Int(dropped.reduce(0) { $0 + $1.sum })
        print("  [\(name)] accounted for: \(accounted) of \(events) events (jobs, dead letters, dropped by rule)")
        if accounted != events || left != 0 {
            throw ValidationError("[\(name)] \(events - accounted) events unaccounted for, \(left) left in the translate queue")
        }
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
