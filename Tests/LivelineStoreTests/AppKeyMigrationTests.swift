import Foundation
import GRDB
import LivelineCore
@testable import LivelineStore
import LivelineStoreTestSupport
import Logging
import PostgresNIO
import Testing

/// A store that the version before apps were kept apart filled (Fixtures/: its translator,
/// sender, api and `liveline dlq replay`, on SQLite and on PostgreSQL) moves into app keys
/// whole. Filled for one app, it has nothing to move: the default app's ids are their keys.
/// Had its score domain served another app, the game's rows gain that app and nothing else
/// changes: every table keeps every row, and the store answers for the keys.
@Suite("The migration to app keys")
struct AppKeyMigrationTests {
    static let app = "com.example.liveline"
    static let scores = "com.example.scores"
    /// The fixtures' domains, all of one app, as the deployment that filled them had them.
    static let oneApp = AppLayout(
        defaultApp: app, appOfDomain: ["ride": app, "delivery": app, "score": app],
        appOfAttributesType: ["RideAttributes": app, "DeliveryAttributes": app, "ScoreAttributes": app])
    /// The score domain another app's.
    static let twoApps = AppLayout(
        defaultApp: app, appOfDomain: ["ride": app, "delivery": app, "score": scores],
        appOfAttributesType: ["RideAttributes": app, "DeliveryAttributes": app, "ScoreAttributes": scores])

    typealias Row = [String: String]

    @Test(arguments: [oneApp, twoApps])
    func aSQLiteStoreThePreviousVersionFilledMovesIntoItsApps(layout: AppLayout) async throws {
        let fixture = try #require(Bundle.module.url(forResource: "previous", withExtension: "sqlite", subdirectory: "Fixtures"))
        try await SQLiteTestDatabase.withPath { path in
            try FileManager.default.copyItem(atPath: fixture.path, toPath: path)
            let before = try Self.sqliteRows(path)
            #expect(before["schema_version"]?.count == 12)
            let store = try SQLiteLivelineStore(configuration: .init(path: path, apps: layout))
            #expect(try await store.schemaVersion() == SQLiteSchema.latestVersion)
            Self.expectMoved(before, after: try Self.sqliteRows(path), layout)
            try await Self.expectAnswersForKeys(store, before, layout)
            // Another default app would read the bare ids as its own.
            var other = layout
            other.defaultApp = "com.example.other"
            let error = #expect(throws: StoreError.self) { _ = try SQLiteLivelineStore(configuration: .init(path: path, apps: other)) }
            #expect(error?.message.contains("keeps the ids of app \(Self.app)") == true)
        }
    }

    @Test(
        .enabled(if: PostgresTestDatabase.isRequested, "set LIVELINE_TEST_POSTGRES_URL (scripts/with-postgres swift test)"),
        arguments: [oneApp, twoApps])
    func aPostgreSQLStoreThePreviousVersionFilledMovesIntoItsApps(layout: AppLayout) async throws {
        let fixture = try #require(Bundle.module.url(forResource: "previous-postgres", withExtension: "sql", subdirectory: "Fixtures"))
        let dump = try String(contentsOf: fixture, encoding: .utf8)
        try await PostgresTestDatabase.withSchema { _, client in
            for statement in dump.components(separatedBy: ";\n") where !statement.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
                try await client.query(PostgresQuery(unsafeSQL: statement))
            }
            let before = try await Self.postgresRows(client)
            #expect(before["schema_version"]?.count == 12)
            let store = PostgresLivelineStore(client: client, logger: Logger(label: "test.migrate"), apps: layout)
            try await store.migrate()
            #expect(try await store.schemaVersion() == PostgresSchema.latestVersion)
            Self.expectMoved(before, after: try await Self.postgresRows(client), layout)
            try await Self.expectAnswersForKeys(store, before, layout)
            var other = layout
            other.defaultApp = "com.example.other"
            await #expect(throws: StoreError.self) {
                try await PostgresLivelineStore(client: client, logger: Logger(label: "test.migrate"), apps: other).migrate()
            }
        }
    }

    /// The tables after the move: every row of before, and the other app's ids (the score
    /// domain's, in `twoApps`) as its keys; nothing else changed.
    static func expectMoved(_ before: [String: [Row]], after: [String: [Row]], _ layout: AppLayout) {
        let domainOf = Dictionary((before["activities"] ?? []).map { ($0["id"] ?? "", $0["domain"] ?? "") }) { first, _ in first }
        let keys = AppKeys(defaultApp: layout.defaultApp)
        func moved(_ id: String?, domain: String?) -> String? {
            guard let id, id != "null", !id.isEmpty, let domain, let app = layout.appOfDomain[domain] else { return id }
            return keys.key(app: app, id: id)
        }
        var expected = before
        expected["activities"] = before["activities"]?.map { row in
            var row = row
            row["id"] = moved(row["id"], domain: row["domain"])
            row["user_id"] = moved(row["user_id"], domain: row["domain"])
            return row
        }
        for (table, columns) in [
            ("update_tokens", ["activity_id"]), ("activity_trace", ["activity_id"]), ("start_topics", ["topic", "activity_id"]),
            ("late_starts", ["user_id", "activity_id"]),
        ] {
            expected[table] = before[table]?.map { row in
                var row = row
                let domain = domainOf[row["activity_id"] ?? ""]
                for column in columns { row[column] = moved(row[column], domain: domain) }
                if table == "update_tokens", row["device_id"]?.contains("/") == true {
                    row["device_id"] = moved(row["device_id"], domain: domain)
                }
                return row
            }
        }
        for (table, column) in [("dead_letters", "activity_id"), ("channels", "key")] {
            expected[table] = before[table]?.map { row in
                var row = row
                row[column] = moved(row[column], domain: row["domain"])
                return row
            }
        }
        expected["push_to_start_tokens"] = before["push_to_start_tokens"]?.map { row in
            var row = row
            if let app = layout.appOfAttributesType[row["attributes_type"] ?? ""], let user = row["user_id"] {
                row["user_id"] = keys.key(app: app, id: user)
            }
            return row
        }
        for table in expected.keys.sorted() where table != "schema_version" {
            #expect(Self.sorted(after[table] ?? []) == Self.sorted(expected[table] ?? []), "\(table)")
        }
        #expect(after["store_apps"]?.map { $0["default_app"] } == [layout.defaultApp])
    }

    /// What on-call and the workers ask of a migrated store, by key.
    static func expectAnswersForKeys(_ store: any ActivityStore, _ before: [String: [Row]], _ layout: AppLayout) async throws {
        let keys = AppKeys(defaultApp: layout.defaultApp)
        let appOf = { (domain: String?) in domain.flatMap { layout.appOfDomain[$0] } ?? layout.defaultApp }
        for activity in before["activities"] ?? [] {
            let id = try #require(activity["id"])
            let app = appOf(activity["domain"])
            let record = try await store.activity(id: keys.key(app: app, id: id))
            #expect(record != nil, "activity \(id)")
            if let user = activity["user_id"], !user.isEmpty { #expect(record?.userID == keys.key(app: app, id: user)) }
            let lines = (before["activity_trace"] ?? []).filter { $0["activity_id"] == id }.count
            #expect(try await store.trace(activityID: keys.key(app: app, id: id), limit: 1_000).count == lines, "trace of \(id)")
        }
        for follow in before["follows"] ?? [] {
            let user = try #require(follow["user_id"]), topic = try #require(follow["topic"])
            #expect(try await store.follows(userID: user).map(\.topic).contains(topic))
        }
        for channel in before["channels"] ?? [] {
            let domain = try #require(channel["domain"]), name = try #require(channel["key"])
            #expect(try await store.channel(domain: domain, key: keys.key(app: appOf(domain), id: name))?.channelID == channel["channel_id"])
        }
        let letters = before["dead_letters"] ?? []
        let ofScores = letters.filter { $0["activity_id"] != "null" && appOf($0["domain"]) == scores }
        #expect(try await store.deadLetters(matching: .init(app: scores), limit: 100).count == ofScores.count)
    }

    static func sorted(_ rows: [Row]) -> [String] {
        rows.map { $0.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "|") }.sorted()
    }

    static func sqliteRows(_ path: String) throws -> [String: [Row]] {
        let queue = try DatabaseQueue(path: path)
        return try queue.read { db in
            var tables: [String: [Row]] = [:]
            for table in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'") {
                tables[table] = try GRDB.Row.fetchAll(db, sql: "SELECT * FROM \(table)").map { row in
                    Dictionary(uniqueKeysWithValues: row.columnNames.map { column in
                        (column, Self.text(row[column] as DatabaseValue))
                    })
                }
            }
            return tables
        }
    }

    static func text(_ value: DatabaseValue) -> String {
        switch value.storage {
        case .null: "null"
        case .int64(let number): String(number)
        case .double(let number): String(number)
        case .string(let text): text
        case .blob(let data): data.base64EncodedString()
        }
    }

    static func postgresRows(_ client: PostgresClient) async throws -> [String: [Row]] {
        var tables: [String: [Row]] = [:]
        var names: [String] = []
        for try await name in try await client.query(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema()"
        ).decode(String.self) {
            names.append(name)
        }
        for table in names {
            var rows: [Row] = []
            for try await json in try await client.query(PostgresQuery(unsafeSQL: "SELECT row_to_json(t)::text FROM \(table) t"))
                .decode(String.self)
            {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
                rows.append(object.mapValues { $0 is NSNull ? "null" : "\($0)" })
            }
            tables[table] = rows
        }
        return tables
    }
}
