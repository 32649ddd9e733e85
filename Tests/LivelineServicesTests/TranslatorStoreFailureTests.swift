import Foundation
import GRDB
import LivelineServices
import LivelineStore
import LivelineStoreTestSupport
import LivelineTestSupport
import Testing

/// A transaction that fails while the next batch is already planned on it: both batches
/// go back to the queue, and once the store recovers every activity ends on its newest
/// state, in order, with nothing left behind.
@Suite(.timeLimit(.minutes(2)))
struct TranslatorStoreFailureTests {
    @Test func failedTransactionsRequeueTheirBatchAndTheOnePlannedOnIt() async throws {
        try await SQLiteTestDatabase.withPath { path in
            let store = try SQLiteLivelineStore(configuration: .init(path: path))
            // A second connection to the same file makes the store's own writes fail, the way
            // a full disk or a broken file would: a trigger aborts every trace insert (each
            // batch's transaction has some) while a row sits in `test_fault`.
            var waits = Configuration()
            waits.busyMode = .timeout(10)
            let fault = try DatabaseQueue(path: path, configuration: waits)
            try await fault.write { db in
                try db.execute(sql: """
                    CREATE TABLE test_fault (on_since INTEGER);
                    CREATE TRIGGER test_fault_trace BEFORE INSERT ON activity_trace
                    WHEN EXISTS (SELECT 1 FROM test_fault)
                    BEGIN SELECT RAISE(ABORT, 'injected store fault'); END;
                    """)
            }
            let activities = (0..<4).map { "f-\($0)" }
            let perActivity = 30
            let settings = TranslatorSettings(prefetch: 40, maxBatchSize: 10, linger: .milliseconds(1), failureBackoff: .milliseconds(20))
            try await TranslatorHarness.run(on: store, settings: settings) { harness, _ in
                for activity in activities {
                    try await harness.registerUpdateToken(Events.tokenA, activity: activity, user: "u-1")
                }
                try await fault.write { db in try db.execute(sql: "INSERT INTO test_fault VALUES (1)") }
                let events = try Events.interleavedRides(activities, steps: perActivity)
                try await harness.publisher.publish(contentsOf: events)
                try await eventually("batches fail while the store does") {
                    harness.metrics.total("liveline_translator_batches_failed_total") >= 4
                }
                try await fault.write { db in try db.execute(sql: "DELETE FROM test_fault") }

                try await eventually("every event handled once the store recovered") {
                    harness.metrics.total("liveline_translator_events_received_total") == Int64(events.count)
                }
                let count = try await harness.control.messageCount(queue: harness.topology.sendQueues[0])
                let consumer = try await harness.control.consume(queue: harness.topology.sendQueues[0], prefetch: 200)
                let jobs = try await harness.jobs(count, consumer: consumer).map(\.job)
                await consumer.close()
                let sequences = Dictionary(grouping: jobs, by: \.activityId).mapValues { $0.map(\.sequence) }
                let newest = Events.newestSequence(steps: perActivity)
                for activity in activities {
                    let sent = sequences[activity] ?? []
                    // Events of a requeued batch come back after newer ones and are dropped as
                    // stale, never sent out of order.
                    #expect(sent == sent.sorted() && Set(sent).count == sent.count, "\(activity): \(sent)")
                    #expect(sent.last == newest, "\(activity) ends on its newest state")
                }
                #expect(try await harness.control.messageCount(queue: harness.topology.deadQueue) == 0)
            } afterShutdown: { harness in
                let left = try await harness.control.messageCount(queue: harness.topology.translateQueues[0])
                #expect(left == 0, "nothing left unacked")
            }
        }
    }
}
