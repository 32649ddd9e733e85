import Foundation
import LivelineBenchSupport
import LivelineStore
import Logging
import PostgresNIO

// Tests: scripts/bench-smoke

/// A translator's batch against each store: load snapshots, apply conditional updates with
/// their trace entries in one transaction.
enum StoreBenchmark {
    static func runSQLite(_ options: BenchOptions) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("liveline-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteLivelineStore(configuration: .init(path: directory.appendingPathComponent("bench.sqlite").path))
        try await measure("sqlite", store: store, options: options)
    }

    static func runPostgres(_ options: BenchOptions, url: String) async throws {
        let schema = "bench_\(UInt32.random(in: 0...UInt32.max))"
        var configuration = try PostgresStoreConfiguration(url: url)
        configuration.schema = schema
        let client = PostgresClient(configuration: configuration.clientConfiguration)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            try await client.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA \(schema)"))
            let store = PostgresLivelineStore(client: client, logger: Logger(label: "bench"))
            try await store.migrate()
            try await measure("postgres", store: store, options: options)
            try await client.query(PostgresQuery(unsafeSQL: "DROP SCHEMA \(schema) CASCADE"))
            group.cancelAll()
        }
    }

    static func measure(_ name: String, store: some ActivityStore, options: BenchOptions) async throws {
        // Seed: every activity exists with two device tokens, as in steady state.
        let seedTime = Date(millisecondsSince1970: 1_800_000_000_000)
        for start in stride(from: 0, to: options.activities, by: options.batchSize) {
            let ids = (start..<min(start + options.batchSize, options.activities)).map { "a-\($0)" }
            _ = try await store.applyChanges(ids.map { change($0, at: seedTime) })
        }
        for index in 0..<min(options.activities, 2_000) {
            for device in ["phone", "watch"] {
                _ = try await store.registerUpdateToken(UpdateTokenRegistration(
                    activityID: "a-\(index)", deviceID: device, userID: "u-\(index % 1000)",
                    token: String(format: "%064x", index * 2 + (device == "phone" ? 0 : 1)), at: seedTime))
            }
        }

        var snapshotTime: Duration = .zero
        var applyTime: Duration = .zero
        var applied = 0
        let clock = ContinuousClock()
        let started = clock.now
        let cpuStarted = ProcessUsage.cpuSeconds()
        for batch in 0..<options.batches {
            let eventTime = Date(millisecondsSince1970: seedTime.millisecondsSince1970 + Int64(batch + 1) * 1000)
            let ids = (0..<options.batchSize).map { "a-\((batch * options.batchSize + $0 * 7) % options.activities)" }
            let requests = ids.enumerated().map { index, id in
                SnapshotRequest(activityID: id, userID: "u-\(index % 1000)", attributesType: "RideAttributes")
            }
            let t0 = clock.now
            _ = try await store.loadSnapshots(requests)
            let t1 = clock.now
            let changes = ids.map { change($0, at: eventTime) }
            let trace = ids.map { TraceEntry(activityID: $0, at: eventTime, kind: .eventReceived, detail: "bench event") }
            applied += try await store.applyChanges(changes, trace: trace).filter { $0 == .applied }.count
            let t2 = clock.now
            snapshotTime += t1 - t0
            applyTime += t2 - t1
        }
        let total = clock.now - started
        let cpu = ProcessUsage.cpuSeconds() - cpuStarted
        let events = Double(options.batches * options.batchSize)
        print(String(
            format: "%@: %.0f events/s end to end, %.0f per CPU-second of this process (%d batches × %d; snapshots %.1f ms/batch, apply+trace %.1f ms/batch; %d applied)",
            name, events / total.seconds, events / cpu, options.batches, options.batchSize,
            snapshotTime.seconds * 1000 / Double(options.batches), applyTime.seconds * 1000 / Double(options.batches), applied))
    }

    static func change(_ id: String, at time: Date) -> ActivityChange {
        ActivityChange(
            activityID: id, domain: "ride", attributesType: "RideAttributes", userID: "u-\((Int(id.dropFirst(2)) ?? 0) % 1000)",
            attributes: #"{"rideId":"\#(id)"}"#,
            contentState: #"{"driverName":"Ana","etaStartSeconds":300,"etaEndSeconds":420,"status":"driverEnRoute","distanceRemaining":1200}"#,
            eventTime: time)
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
