import Foundation
@testable import LivelineStore
import LivelineStoreTestSupport
import Logging
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
