import Foundation
import LivelineServices
import LivelineStore
import Logging
import PostgresNIO
import LivelineTestSupport
import Testing

/// The store a test runs against: SQLite always; PostgreSQL when `scripts/with-postgres`
/// set `LIVELINE_TEST_POSTGRES_URL` (or always in CI, so a missing server fails loudly).
enum StoreKind: String, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    static let postgresURL = ProcessInfo.processInfo.environment["LIVELINE_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }

    static var available: [StoreKind] {
        let ci = ProcessInfo.processInfo.environment["CI"].map { !$0.isEmpty } == true
        return postgresURL != nil || ci ? [.sqlite, .postgres] : [.sqlite]
    }

    var testDescription: String { rawValue }

    struct MissingServer: Error, CustomStringConvertible {
        var description: String { "LIVELINE_TEST_POSTGRES_URL is not set: run the tests through scripts/with-postgres" }
    }

    /// Runs `body` with a fresh store: a temp SQLite file, or a new PostgreSQL schema
    /// (its client running alongside), removed afterwards.
    func withStore<T: Sendable>(_ body: (any ActivityStore) async throws -> T) async throws -> T {
        switch self {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("liveline-translator-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let store = try SQLiteLivelineStore(configuration: .init(path: directory.appendingPathComponent("store.sqlite").path))
            return try await body(store)
        case .postgres:
            guard let url = Self.postgresURL else { throw MissingServer() }
            let schema = "translator_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
            var configuration = try PostgresStoreConfiguration(url: url)
            configuration.schema = schema
            configuration.maximumConnections = 4
            let client = PostgresClient(configuration: configuration.clientConfiguration)
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await client.run() }
                defer { group.cancelAll() }
                try await client.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA \(schema)"))
                do {
                    let store = PostgresLivelineStore(client: client, logger: Logger(label: "test.store"))
                    try await store.migrate()
                    let result = try await body(store)
                    try await client.query(PostgresQuery(unsafeSQL: "DROP SCHEMA \(schema) CASCADE"))
                    return result
                } catch {
                    _ = try? await client.query(PostgresQuery(unsafeSQL: "DROP SCHEMA \(schema) CASCADE"))
                    throw error
                }
            }
        }
    }
}
