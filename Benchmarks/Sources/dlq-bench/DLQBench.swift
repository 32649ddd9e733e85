import ArgumentParser
import Foundation
import LivelineAMQP
import LivelineBenchSupport
import LivelineCore
import LivelineMessaging
import LivelineServices
import LivelineStore
import Logging
import PostgresNIO
import ServiceLifecycle

// Tests: scripts/bench-smoke

/// Prints the on-call figures: the keeper's rate from a full `liveline.dead`, `dlq list`
/// with filters over a large table, and `dlq replay`'s rate, on the real broker and store.
/// Not a test: nothing here asserts a time.
@main
struct DLQBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dlq-bench",
        abstract: "Keeper, dlq list and dlq replay figures on the real broker and SQLite (and PostgreSQL with --postgres-url).")

    @Option(help: "The broker.") var amqpURL = ProcessInfo.processInfo.environment["LIVELINE_AMQP_URL"]
        ?? "amqp://guest:guest@127.0.0.1:5672/%2f"
    @Option(help: "Also measure PostgreSQL (default: LIVELINE_TEST_POSTGRES_URL when set).")
    var postgresURL = ProcessInfo.processInfo.environment["LIVELINE_TEST_POSTGRES_URL"] ?? ""
    @Option(help: "Letters published to the dead-letter queue for the keeper.") var kept = 20_000
    @Option(help: "Letters in the table when dlq list is measured.") var letters = 100_000
    @Option(help: "Letters replayed (half events, half push jobs).") var replay = 10_000
    @Option(help: "Repetitions of each list query.") var runs = 5

    func run() async throws {
        var logger = Logger(label: "dlq-bench")
        logger.logLevel = .warning
        print("dlq-bench: keeper over \(kept) letters, dlq list over \(letters), replay of \(replay)")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dlq-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let sqlite = try SQLiteLivelineStore(configuration: .init(path: directory.appendingPathComponent("dlq.sqlite").path))
        try await measure("sqlite", store: sqlite, logger: logger)
        guard !postgresURL.isEmpty else {
            print("postgres: skipped (give --postgres-url, or run under scripts/with-postgres)")
            return
        }
        let schema = "dlqbench_\(UInt32.random(in: 0...UInt32.max))"
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

    func measure(_ name: String, store: any ActivityStore, logger: Logger) async throws {
        let topology = LivelineTopology(prefix: "bench.dlq.\(UUID().uuidString.prefix(8).lowercased())")
        var amqp = try AMQPConfiguration(url: amqpURL)
        amqp.connectionName = "dlq-bench"
        let connection = try await AMQPConnection.connect(amqp, logger: logger)
        let keeping = try await AMQPConnection.connect(amqp, logger: logger)
        try await connection.declare(topology.amqp)

        // 1. The keeper, from a full queue.
        for start in stride(from: 0, to: kept, by: 1000) {
            try await connection.publish(contentsOf: (start..<min(start + 1000, kept)).map { letterMessage($0, topology) })
        }
        let broker = BrokerUsage()
        var cpu = (ProcessUsage.cpuSeconds(), broker?.cpuSeconds() ?? 0)
        var started = ContinuousClock.now
        let keeper = DeadLetterKeeper(connection: keeping, store: store, topology: topology, logger: logger)
        let group = ServiceGroup(configuration: .init(services: [.init(service: keeper)], logger: logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            while try await store.deadLetterCounts(matching: .init()).values.reduce(0, +) < kept {
                try await Task.sleep(for: .milliseconds(20))
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        var elapsed = seconds(ContinuousClock.now - started)
        print(String(
            format: "%@ keeper: %d letters in %.2f s = %.0f letters/s; CPU per letter: bench %.0f µs, broker %.0f µs",
            name, kept, elapsed, Double(kept) / elapsed,
            (ProcessUsage.cpuSeconds() - cpu.0) / Double(kept) * 1e6, ((broker?.cpuSeconds() ?? 0) - cpu.1) / Double(kept) * 1e6))

        // 2. dlq list over a large table: the rest of the letters stored directly.
        let now = Date()
        for start in stride(from: kept, to: letters, by: 1000) {
            _ = try await store.keepDeadLetters((start..<min(start + 1000, letters)).map { record($0, now: now) })
        }
        let queries: [(String, DeadLetterFilter)] = [
            ("newest 50, no filter", .init()),
            ("--reason BadDeviceToken", .init(reason: "BadDeviceToken")),
            ("--domain score", .init(domain: "score")),
            ("--activity r-4242", .init(activityID: "r-4242")),
            ("--since 1h", .init(since: now.addingTimeInterval(-3600))),
            ("--reason BadDeviceToken --domain ride --since 24h",
             .init(reason: "BadDeviceToken", domain: "ride", since: now.addingTimeInterval(-86_400))),
        ]
        for (label, filter) in queries {
            var times: [Double] = []
            var total = 0
            for _ in 0..<runs {
                let start = ContinuousClock.now
                _ = try await store.deadLetters(matching: filter, limit: 50)
                total = try await store.deadLetterCounts(matching: filter).values.reduce(0, +)
                times.append(seconds(ContinuousClock.now - start) * 1000)
            }
            times.sort()
            print(String(
                format: "%@ dlq list %@ over %d letters (%d match): %.1f ms median, %.1f–%.1f ms over %d runs (table and counts)",
                name, label, letters, total, times[times.count / 2], times.first!, times.last!, runs))
        }

        // 3. dlq replay: half events, half push jobs for activities with a registered token.
        let jobs = replay / 2
        // The activities' last event is the letters' own (same second), so none is superseded.
        let applied = Date(timeIntervalSince1970: TimeInterval(Int64(now.timeIntervalSince1970) - 60))
        for start in stride(from: 0, to: jobs, by: 500) {
            let ids = (start..<min(start + 500, jobs)).map { "replay-\($0)" }
            _ = try await store.applyChanges(ids.map {
                ActivityChange(activityID: $0, domain: "ride", attributesType: "RideAttributes", userID: "u-1",
                               attributes: nil, contentState: "{}", eventTime: applied, end: nil)
            })
        }
        for index in 0..<jobs {
            _ = try await store.registerUpdateToken(UpdateTokenRegistration(
                activityID: "replay-\(index)", deviceID: "phone", userID: "u-1", token: token(index), domain: "ride",
                attributesType: "RideAttributes", at: now))
        }
        var replayLetters: [DeadLetterRecord] = []
        for index in 0..<replay { replayLetters.append(replayRecord(index, jobs: jobs, now: now)) }
        for start in stride(from: 0, to: replayLetters.count, by: 1000) {
            _ = try await store.keepDeadLetters(Array(replayLetters[start..<min(start + 1000, replayLetters.count)]))
        }
        cpu = (ProcessUsage.cpuSeconds(), broker?.cpuSeconds() ?? 0)
        started = ContinuousClock.now
        let summary = try await DeadLetterReplay(store: store, connection: connection, topology: topology)
            .run(matching: .init(reason: "bench-replay"), limit: replay, force: false, dryRun: false) { _ in }
        elapsed = seconds(ContinuousClock.now - started)
        let arrived = try await connection.messageCount(queue: topology.translateQueues[0])
            + connection.messageCount(queue: topology.sendQueues[0])
        print(String(
            format: "%@ dlq replay: %d letters in %.2f s = %.0f letters/s (replayed %d, skipped %d, failed %d; %d arrived); CPU per letter: bench %.0f µs, broker %.0f µs",
            name, replay, elapsed, Double(replay) / elapsed, summary.replayed, summary.skipped.values.reduce(0, +),
            summary.failed, arrived, (ProcessUsage.cpuSeconds() - cpu.0) / Double(replay) * 1e6,
            ((broker?.cpuSeconds() ?? 0) - cpu.1) / Double(replay) * 1e6))
        print(String(format: "%@ peak RSS %.0f MiB", name, ProcessUsage.peakRSSMebibytes()))

        for queue in topology.amqp.queues { try? await connection.delete(queue: queue.name) }
        for exchange in topology.amqp.exchanges { try? await connection.delete(exchange: exchange.name) }
        await connection.close()
        await keeping.close()
    }

    static let reasons = [
        "BadDeviceToken", "retries-exhausted", "invalid-event", "schema-mismatch", "over-budget", "delivery_limit",
        "payload-too-large", "Unregistered", "unknown-app", "rejected",
    ]
    static let domains = ["ride", "delivery", "score", "flight", "parcel"]

    /// A letter as a sender writes it: the document with its headers.
    func letterMessage(_ index: Int, _ topology: LivelineTopology) -> AMQPMessage {
        let letter = DeadLetter(
            reason: DeadLetterReason(rawValue: Self.reasons[index % Self.reasons.count]), message: "bench letter \(index)",
            originalBody: Data(#"{"id":"e-\#(index)","type":"ride.status","data":{"activityId":"r-\#(index % 10_000)"}}"#.utf8),
            firstAttemptAt: EventTime(Date()), domain: Self.domains[index % Self.domains.count],
            activityId: "r-\(index % 10_000)", eventId: "e-\(index)")
        return AMQPMessage(
            exchange: topology.deadExchange, routingKey: "", body: (try? JSONEncoder().encode(letter)) ?? Data(),
            properties: AMQPProperties(
                contentType: "application/json",
                headers: [SenderHeaders.reason: .string(letter.reason.rawValue), DeadLetterHeaders.source: "translator"],
                messageID: "bench-\(index)-\(UUID().uuidString.prefix(8))"))
    }

    /// A stored letter, spread over reasons, domains, 10,000 activities and the last 7 days.
    func record(_ index: Int, now: Date) -> DeadLetterRecord {
        let at = now.addingTimeInterval(-Double(index % 604_800))
        return DeadLetterRecord(
            id: "fill-\(index)", reason: Self.reasons[index % Self.reasons.count], source: .sender, message: "bench",
            domain: Self.domains[index % Self.domains.count], activityID: "r-\(index % 10_000)", eventID: "e-\(index)",
            payloadKind: .event, body: Data(#"{"id":"e-\#(index)","type":"ride.status"}"#.utf8), routingKey: "ride.status",
            attempts: 1, firstFailedAt: at, lastFailedAt: at, keptAt: now)
    }

    /// A letter to replay: even ones are events, odd ones push jobs to a registered token.
    func replayRecord(_ index: Int, jobs: Int, now: Date) -> DeadLetterRecord {
        if index % 2 == 0 {
            return DeadLetterRecord(
                id: "replay-event-\(index)", reason: "bench-replay", source: .translator, message: "bench",
                domain: "ride", activityID: "r-\(index)", eventID: "e-\(index)", payloadKind: .event,
                body: Data(#"{"id":"e-\#(index)","type":"ride.status","data":{"activityId":"r-\#(index)"}}"#.utf8),
                routingKey: "ride.status", attempts: 1, firstFailedAt: now, lastFailedAt: now, keptAt: now)
        }
        let activity = "replay-\((index / 2) % max(1, jobs))"
        let target = PushTarget.device(token: token((index / 2) % max(1, jobs)), kind: .update)
        let jobID = JobIdentity.jobId(eventId: "e-\(index)", target: target)
        let stamp = Int64(now.timeIntervalSince1970) - 60
        let job = PushJob(
            jobId: jobID, apnsId: JobIdentity.apnsId(jobId: jobID), activityId: activity, domain: "ride", eventId: "e-\(index)",
            eventTime: EventTime(millisecondsSince1970: stamp * 1000), userId: "u-1", attributesType: "RideAttributes",
            target: target, bundleId: "com.example.liveline", priority: .low, expiration: stamp + 900, event: .update,
            payload: Data(#"{"aps":{"timestamp":\#(stamp),"event":"update","content-state":{}}}"#.utf8), isTerminal: false,
            sequence: stamp * 1000)
        return DeadLetterRecord(
            id: "replay-job-\(index)", reason: "bench-replay", source: .sender, message: "bench", domain: "ride",
            activityID: activity, eventID: job.eventId, jobID: jobID, payloadKind: .job, body: job.encoded(),
            routingKey: "ride.update", attempts: 1, firstFailedAt: now, lastFailedAt: now, keptAt: now)
    }

    func token(_ index: Int) -> String { String(format: "%064x", index + 1) }

    func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
