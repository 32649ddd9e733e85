import Dispatch
import Foundation
import GRDB
@testable import LivelineStore
import LivelineStoreTestSupport
import Testing

/// How the SQLite store uses its connections: a snapshot load that its caller says meets no
/// write of its own runs on the writer when none of the store's writes holds it (the batch's
/// transaction then finds the pages warm), and on a reader otherwise.
@Suite("SQLite connections")
struct SQLiteConnectionTests {
    /// Every connection, the writer and each reader, gets the configured page cache.
    @Test func eachConnectionHasTheConfiguredPageCache() async throws {
        try await SQLiteTestDatabase.withPath { path in
            let store = try SQLiteLivelineStore(configuration: .init(path: path, cacheMiB: 3))
            #expect(try await store.pool.write { try Int.fetchOne($0, sql: "PRAGMA cache_size") } == -3 * 1024)
            #expect(try await store.pool.read { try Int.fetchOne($0, sql: "PRAGMA cache_size") } == -3 * 1024)
            let standard = try SQLiteLivelineStore(configuration: .init(path: path))
            #expect(try await standard.pool.read { try Int.fetchOne($0, sql: "PRAGMA cache_size") } == -2 * 1024)
        }
    }

    /// A load that may take the writer must not wait for a write that holds it, and must see
    /// what was committed before that write began. Both ways to write count: on the calling
    /// thread (batches) and on the writer's queue (tokens, dead letters, pruning).
    @Test(arguments: [true, false])
    func aLoadBesideAWriteDoesNotWaitForItAndSeesTheCommittedState(onTheCallingThread: Bool) async throws {
        try await SQLiteTestDatabase.withPath { path in
            let store = try SQLiteLivelineStore(configuration: .init(path: path))
            _ = try await store.applyChanges([Fixtures.change("a-1", at: 1, state: #"{"status":"committed"}"#)])
            let inside = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            // True when the write gave up waiting: the load below was stuck behind it.
            let update: @Sendable (Database) throws -> Bool = { db in
                try db.execute(
                    sql: "UPDATE activities SET content_state = ? WHERE id = ?", arguments: [#"{"status":"uncommitted"}"#, "a-1"])
                inside.signal()
                return release.wait(timeout: .now() + .seconds(10)) == .timedOut
            }
            let writing = Task { onTheCallingThread ? try await store.writeHere(update) : try await store.write(update) }
            await withCheckedContinuation { (entered: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().async {
                    inside.wait()
                    entered.resume()
                }
            }
            let during = try await loadedActivity(from: store)
            release.signal()
            #expect(try await writing.value == false, "the load waited for the write to end")
            #expect(during?.contentState == #"{"status":"committed"}"#)
            let after = try await loadedActivity(from: store)
            #expect(after?.contentState == #"{"status":"uncommitted"}"#)
        }
    }

    /// A load on the writer reads through its page cache, which another process's commit must
    /// invalidate: two stores on one file stand for two workers.
    @Test func aLoadSeesWhatAnotherProcessCommitted() async throws {
        try await SQLiteTestDatabase.withPath { path in
            let mine = try SQLiteLivelineStore(configuration: .init(path: path))
            let other = try SQLiteLivelineStore(configuration: .init(path: path))
            for second in 1...3 {
                _ = try await mine.applyChanges([Fixtures.change("a-1", at: Double(2 * second - 1))])
                #expect(try await loadedActivity(from: mine)?.contentState == #"{"status":"at-\#(Double(2 * second - 1))"}"#)
                _ = try await other.applyChanges([Fixtures.change("a-1", at: Double(2 * second))])
                #expect(try await loadedActivity(from: mine)?.contentState == #"{"status":"at-\#(Double(2 * second))"}"#)
            }
        }
    }

    /// The batch's transactions are begun and ended by hand (cached statements): a body that
    /// throws must leave nothing behind and the connection usable, with its busy timeout back.
    @Test func aFailedBatchWriteIsRolledBackAndTheWriterStaysUsable() async throws {
        struct Refused: Error {}
        try await SQLiteTestDatabase.withPath { path in
            let store = try SQLiteLivelineStore(configuration: .init(path: path, busyTimeout: 3))
            _ = try await store.applyChanges([Fixtures.change("a-1", at: 1)])
            await #expect(throws: Refused.self) {
                try await store.writeHere { db in
                    try db.execute(sql: "UPDATE activities SET content_state = '{}' WHERE id = 'a-1'")
                    throw Refused()
                }
            }
            #expect(try await loadedActivity(from: store)?.contentState == #"{"status":"at-1.0"}"#)
            _ = try await store.applyChanges([Fixtures.change("a-1", at: 2)])
            #expect(try await loadedActivity(from: store)?.contentState == #"{"status":"at-2.0"}"#)
            #expect(try await store.writeHere { try Int.fetchOne($0, sql: "PRAGMA busy_timeout") } == 3000)
            #expect(try await store.writeHere { $0.isInsideTransaction })
        }
    }

    /// When another process holds the write lock, the batch's write neither fails nor skips:
    /// it waits on the writer's queue and goes through once the lock is free.
    @Test func aBatchWriteWaitsForAnotherProcesssLock() async throws {
        try await SQLiteTestDatabase.withPath { path in
            let store = try SQLiteLivelineStore(configuration: .init(path: path, busyTimeout: 10))
            var holder = Configuration()
            holder.allowsUnsafeTransactions = true  // the lock stays held between the two calls
            let other = try DatabaseQueue(path: path, configuration: holder)
            try await other.writeWithoutTransaction { try $0.execute(sql: "BEGIN IMMEDIATE") }
            let writing = Task { try await store.applyChanges([Fixtures.change("a-1", at: 1)]) }
            try await Task.sleep(for: .milliseconds(200))
            try await other.writeWithoutTransaction { try $0.execute(sql: "COMMIT") }
            #expect(try await writing.value == [.applied])
            #expect(try await loadedActivity(from: store) != nil)
            #expect(try await store.writeHere { try Int.fetchOne($0, sql: "PRAGMA busy_timeout") } == 10_000)
        }
    }

    /// Activity `a-1` as the translator's load sees it when no write of its own is under way.
    private func loadedActivity(from store: SQLiteLivelineStore) async throws -> ActivityRecord? {
        let request = SnapshotRequest(activityID: "a-1", userID: "u-1", attributesType: "RideAttributes")
        return try await store.loadSnapshots([request], whileWriting: false)["a-1"]?.activity
    }
}
