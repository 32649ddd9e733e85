import Foundation
import LivelineStoreTestSupport
import Logging
import PostgresNIO
import Testing

@testable import LivelineStore

/// A connection that PostgreSQL closes under an operation must fail the operation, never
/// leave it waiting: postgres-nio 1.33 drops a query written to a connection that has just
/// closed, and a store outage once left a worker waiting forever on one.
@Suite(.enabled(if: PostgresTestDatabase.isRequested, "set LIVELINE_TEST_POSTGRES_URL (scripts/with-postgres swift test)"))
struct PostgresConnectionLossTests {
    @Test("an operation whose connection is terminated fails at once, however long its query would wait")
    func operationEndsWithItsConnection() async throws {
        try await PostgresTestDatabase.withSchema { _, client in
            let store = PostgresLivelineStore(client: client, logger: Logger(label: "test.connection-loss"))
            let started = ContinuousClock.now
            await #expect(throws: StoreError.self) {
                try await store.onConnection { connection in
                    try await Self.terminate(connection, from: store)
                    // Stands for the query that is never answered.
                    try await Task.sleep(for: .seconds(120))
                }
            }
            #expect(ContinuousClock.now - started < .seconds(10))
        }
    }

    @Test("a transaction whose connection is terminated mid-way fails, and the store goes on with a new connection")
    func transactionEndsWithItsConnection() async throws {
        try await PostgresTestDatabase.withSchema { _, client in
            let store = PostgresLivelineStore(client: client, logger: Logger(label: "test.connection-loss"))
            try await store.migrate()
            let started = ContinuousClock.now
            await #expect(throws: (any Error).self) {
                try await store.transaction { connection in
                    try await Self.terminate(connection, from: store)
                    try await connection.query("SELECT 1", logger: store.logger)
                }
            }
            #expect(ContinuousClock.now - started < .seconds(10))
            #expect(try await store.schemaVersion() == PostgresSchema.latestVersion)
        }
    }

    @Test("many operations leave nothing waiting on their connections' close: one watch per connection, not per operation")
    func operationsDoNotPileUpOnAConnection() async throws {
        try await PostgresTestDatabase.withSchema { _, client in
            let store = PostgresLivelineStore(client: client, logger: Logger(label: "test.connection-loss"))
            try await store.migrate()
            for _ in 0..<300 { try await store.query("SELECT 1") }
            #expect(store.closeWatch.runningCount == 0)
            // The test database pools at most 4 connections (PostgresTestDatabase).
            #expect((1...4).contains(store.closeWatch.watchedCount))
            // A watched connection that closes is forgotten, and what ran on it failed.
            await #expect(throws: StoreError.self) {
                try await store.onConnection { connection in
                    try await Self.terminate(connection, from: store)
                    try await Task.sleep(for: .seconds(120))
                }
            }
            // The operation failed as its connection closed, which can be before the query
            // that terminated it (on another connection) has its answer: give that a moment.
            let deadline = ContinuousClock.now + .seconds(5)
            while store.closeWatch.runningCount > 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            #expect(store.closeWatch.runningCount == 0)
        }
    }

    /// Ends `connection`'s backend through another of the store's connections.
    static func terminate(_ connection: PostgresConnection, from store: PostgresLivelineStore) async throws {
        let backend = try #require(try await PostgresLivelineStore.first(Int32.self, "SELECT pg_backend_pid()", on: connection, logger: store.logger))
        try await store.query("SELECT pg_terminate_backend(\(backend))")
        // The server's FATAL error and the close take a moment to arrive.
        _ = try? await connection.closeFuture.get()
    }
}
