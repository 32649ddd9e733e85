import Foundation
import LivelineStore
import LivelineStoreTestSupport
import Logging
import Synchronization
import Testing

@testable import LivelineServices

/// The sender acks a job in the follow-up of its trace entry, so "acked" must imply
/// "traced": the follow-up runs only once the entry is committed.
@Suite("Sender trace writer")
struct TraceWriterTests {
    static func entry(_ activityID: String) -> TraceEntry {
        TraceEntry(activityID: activityID, at: Date(), kind: .apnsOutcome, detail: "delivered (200), attempt 1")
    }

    static func writer(_ store: any SenderStore, batchSize: Int) -> TraceWriter {
        // An hour between ticks: only a full batch, flush() or finish() commits.
        TraceWriter(store: store, interval: .seconds(3_600), batchSize: batchSize, metrics: SenderMetrics(), logger: Logger(label: "test"))
    }

    /// Waits up to 5 s for `condition`.
    static func eventually(_ condition: () -> Bool) async throws {
        for _ in 0..<500 where !condition() { try await Task.sleep(for: .milliseconds(10)) }
    }

    @Test("follow-ups run after the commit that carries their entries, and not before")
    func followUpsFollowTheCommit() async throws {
        try await SQLiteTestDatabase.withStore { store in
            let writer = Self.writer(store, batchSize: 3)
            let acked = Mutex<[String]>([])
            for id in ["r-1", "r-2"] {
                writer.append([Self.entry(id)]) { recorded in acked.withLock { $0.append(recorded ? id : "unrecorded") } }
            }
            try await Task.sleep(for: .milliseconds(50))
            #expect(acked.withLock { $0 }.isEmpty, "nothing is committed below the batch size")
            #expect(try await store.trace(activityID: "r-1", limit: 10).isEmpty)

            writer.append([Self.entry("r-3")]) { recorded in acked.withLock { $0.append(recorded ? "r-3" : "unrecorded") } }
            try await Self.eventually { acked.withLock { $0.count } == 3 }
            #expect(acked.withLock { Set($0) } == ["r-1", "r-2", "r-3"])
            for id in ["r-1", "r-2", "r-3"] {
                #expect(try await store.trace(activityID: id, limit: 10).map(\.detail) == ["delivered (200), attempt 1"])
            }
        }
    }

    @Test("flush commits what waits; after finish every append commits on its own; no entries, no wait")
    func flushFinishAndEmpty() async throws {
        try await SQLiteTestDatabase.withStore { store in
            let writer = Self.writer(store, batchSize: 1_000)
            let acked = Mutex<[String]>([])
            writer.append([]) { recorded in acked.withLock { $0.append(recorded ? "empty" : "unrecorded") } }
            #expect(acked.withLock { $0 } == ["empty"])

            writer.append([Self.entry("r-1")]) { recorded in acked.withLock { $0.append(recorded ? "r-1" : "unrecorded") } }
            await writer.flush()
            #expect(acked.withLock { $0 } == ["empty", "r-1"])

            writer.finish()
            writer.append([Self.entry("r-2")]) { recorded in acked.withLock { $0.append(recorded ? "r-2" : "unrecorded") } }
            try await Self.eventually { acked.withLock { $0.count } == 3 }
            #expect(acked.withLock { $0 } == ["empty", "r-1", "r-2"])
            #expect(try await store.trace(activityID: "r-2", limit: 10).count == 1)
        }
    }

    @Test("the ticker sleeps while nothing waits, commits an entry an interval after it arrives, and ends on finish or cancel")
    func tickerWakesForEntries() async throws {
        try await SQLiteTestDatabase.withStore { store in
            let writer = TraceWriter(
                store: store, interval: .milliseconds(20), batchSize: 1_000, metrics: SenderMetrics(), logger: Logger(label: "test"))
            let ticker = Task { await writer.run() }
            let acked = Mutex<[String]>([])
            // Idle long enough for several intervals, then one entry below the batch size.
            try await Task.sleep(for: .milliseconds(100))
            writer.append([Self.entry("r-1")]) { recorded in acked.withLock { $0.append(recorded ? "r-1" : "unrecorded") } }
            try await Self.eventually { !acked.withLock { $0 }.isEmpty }
            #expect(acked.withLock { $0 } == ["r-1"], "the ticker woke for the entry and committed it")
            #expect(try await store.trace(activityID: "r-1", limit: 10).count == 1)

            // Idle again: finish() must end the waiting ticker.
            try await Task.sleep(for: .milliseconds(50))
            writer.finish()
            await ticker.value

            let cancelled = Self.writer(store, batchSize: 1_000)
            let waiting = Task { await cancelled.run() }
            try await Task.sleep(for: .milliseconds(50))
            waiting.cancel()
            await waiting.value
            // Cancelled, it no longer ticks, so an append commits on its own.
            cancelled.append([Self.entry("r-2")]) { recorded in acked.withLock { $0.append(recorded ? "r-2" : "unrecorded") } }
            try await Self.eventually { acked.withLock { $0.count } == 2 }
            #expect(acked.withLock { $0 } == ["r-1", "r-2"])
        }
    }
}
