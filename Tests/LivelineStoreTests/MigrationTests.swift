import Foundation
import GRDB
@testable import LivelineStore
import LivelineStoreTestSupport
import Logging
import PostgresNIO
import Testing

@Suite("Migrations")
struct MigrationTests {
    @Test func sqliteMigratesOnceWhenTwoProcessesOpenAtOnce() async throws {
        try await SQLiteTestDatabase.withPath { path in
            let versions = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        try await SQLiteLivelineStore(configuration: .init(path: path)).schemaVersion()
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(versions == [SQLiteSchema.latestVersion, SQLiteSchema.latestVersion])
            let reopened = try SQLiteLivelineStore(configuration: .init(path: path))
            #expect(try await reopened.schemaVersion() == SQLiteSchema.latestVersion)
        }
    }

    @Test(.enabled(if: PostgresTestDatabase.isRequested, "set LIVELINE_TEST_POSTGRES_URL (scripts/with-postgres swift test)"))
    func postgresMigratesOnceWhenTwoProcessesStartAtOnce() async throws {
        try await PostgresTestDatabase.withSchema { _, client in
            let versions = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<3 {
                    group.addTask {
                        let store = PostgresLivelineStore(client: client, logger: Logger(label: "test.migrate"))
                        try await store.migrate()
                        return try await store.schemaVersion()
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(versions == Array(repeating: PostgresSchema.latestVersion, count: 3))
            let rows = try await client.query("SELECT count(*) FROM schema_version").decode(Int64.self)
            // One row per migration, each applied once.
            for try await count in rows { #expect(count == Int64(PostgresSchema.latestVersion)) }
        }
    }

    /// Schema 5 keys push-to-start tokens by device: a token registered before it (one per
    /// user and type) is kept, as the device `default`, still usable.
    @Test func sqliteKeepsAnOlderPushToStartTokenAsTheDefaultDevice() async throws {
        try await SQLiteTestDatabase.withPath { path in
            let queue = try DatabaseQueue(path: path)
            try await queue.write { db in
                try db.execute(sql: "CREATE TABLE schema_version (version INTEGER PRIMARY KEY NOT NULL, applied_ms INTEGER NOT NULL)")
                for migration in SQLiteSchema.migrations where migration.version <= 4 {
                    try db.execute(sql: migration.sql)
                    try db.execute(sql: "INSERT INTO schema_version VALUES (?, 0)", arguments: [migration.version])
                }
                try db.execute(sql: """
                    INSERT INTO push_to_start_tokens (user_id, attributes_type, token, registered_ms, environment)
                    VALUES ('u-1', 'RideAttributes', ?, 1000, 'sandbox')
                    """, arguments: [Fixtures.token(1)])
            }
            try queue.close()
            let store = try SQLiteLivelineStore(configuration: .init(path: path))
            #expect(try await store.schemaVersion() == SQLiteSchema.latestVersion)
            try await Self.expectMigratedToken(in: store)
        }
    }

    @Test(.enabled(if: PostgresTestDatabase.isRequested, "set LIVELINE_TEST_POSTGRES_URL (scripts/with-postgres swift test)"))
    func postgresKeepsAnOlderPushToStartTokenAsTheDefaultDevice() async throws {
        try await PostgresTestDatabase.withSchema { _, client in
            try await client.query("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_ms BIGINT NOT NULL)")
            for migration in PostgresSchema.migrations where migration.version <= 4 {
                for statement in migration.statements { try await client.query(PostgresQuery(unsafeSQL: statement)) }
                try await client.query("INSERT INTO schema_version VALUES (\(migration.version), 0)")
            }
            try await client.query("""
                INSERT INTO push_to_start_tokens (user_id, attributes_type, token, registered_ms, environment)
                VALUES ('u-1', 'RideAttributes', \(Fixtures.token(1)), 1000, 'sandbox')
                """)
            let store = PostgresLivelineStore(client: client, logger: Logger(label: "test.migrate"))
            try await store.migrate()
            #expect(try await store.schemaVersion() == PostgresSchema.latestVersion)
            try await Self.expectMigratedToken(in: store)
        }
    }

    private static func expectMigratedToken(in store: some ActivityStore) async throws {
        let request = SnapshotRequest(activityID: "x", userID: "u-1", attributesType: "RideAttributes")
        let tokens = try #require(try await store.loadSnapshots([request])["x"]?.pushToStartTokens)
        #expect(tokens == [PushToStartToken(
            userID: "u-1", attributesType: "RideAttributes", deviceID: "default", token: Fixtures.token(1),
            registeredAt: Date(millisecondsSince1970: 1000), environment: .sandbox)])
        // A second device of the same user and type now has a row of its own.
        try await store.registerPushToStartToken(PushToStartToken(
            userID: "u-1", attributesType: "RideAttributes", deviceID: "ipad", token: Fixtures.token(2), registeredAt: Date()))
        #expect(try await store.loadSnapshots([request])["x"]?.pushToStartTokens.count == 2)
    }
}

@Suite("SQLite across processes")
struct SQLiteSharedFileTests {
    /// Two processes on one node open the same file: SQLite's lock and the busy timeout
    /// serialize their writes, and the conditional update keeps the newest event.
    @Test func twoStoresOnOneFileKeepTheNewestEvent() async throws {
        try await SQLiteTestDatabase.withPath { path in
            let stores = [
                try SQLiteLivelineStore(configuration: .init(path: path)),
                try SQLiteLivelineStore(configuration: .init(path: path)),
            ]
            let ids = (0..<50).map { "shared-\($0)" }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (writer, store) in stores.enumerated() {
                    group.addTask {
                        for round in 0..<5 {
                            let time = Double(round * 2 + writer)
                            _ = try await store.applyChanges(ids.map { Fixtures.change($0, at: time) })
                        }
                    }
                }
                try await group.waitForAll()
            }
            for id in ids {
                #expect(try await stores[0].activity(id: id)?.lastEventAt == Fixtures.time(9))
            }
        }
    }
}
