import Foundation
import LivelineStore
import Logging
import PostgresNIO

/// A PostgreSQL schema per test, on the server `scripts/with-postgres` starts.
public enum PostgresTestDatabase {
    public static let urlVariable = "LIVELINE_TEST_POSTGRES_URL"

    public static var url: String? { ProcessInfo.processInfo.environment[urlVariable].flatMap { $0.isEmpty ? nil : $0 } }

    /// In CI the PostgreSQL suite always runs, so a missing server fails instead of passing quietly.
    public static var isRequested: Bool {
        url != nil || ProcessInfo.processInfo.environment["CI"].map { !$0.isEmpty } == true
    }

    public struct MissingServer: Error, CustomStringConvertible {
        public var description: String { "\(urlVariable) is not set: run the tests through scripts/with-postgres" }
    }

    public static func configuration(schema: String) throws -> PostgresClient.Configuration {
        guard let url else { throw MissingServer() }
        var configuration = try PostgresStoreConfiguration(url: url)
        configuration.schema = schema
        configuration.maximumConnections = 4
        return configuration.clientConfiguration
    }

    public static func withClient<T: Sendable>(schema: String, _ body: (PostgresClient) async throws -> T) async throws -> T {
        let client = PostgresClient(configuration: try configuration(schema: schema))
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }

    /// Runs `body` with a store in a new schema, dropped afterwards.
    public static func withStore<T: Sendable>(_ body: (PostgresLivelineStore) async throws -> T) async throws -> T {
        try await withSchema { schema, client in
            let store = PostgresLivelineStore(client: client, logger: Logger(label: "test.store"))
            try await store.migrate()
            return try await body(store)
        }
    }

    /// Runs `body` with a new, empty schema and a client whose search path is that schema.
    public static func withSchema<T: Sendable>(_ body: (String, PostgresClient) async throws -> T) async throws -> T {
        let schema = "test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        return try await withClient(schema: schema) { client in
            try await client.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA \(schema)"))
            do {
                let result = try await body(schema, client)
                try await client.query(PostgresQuery(unsafeSQL: "DROP SCHEMA \(schema) CASCADE"))
                return result
            } catch {
                _ = try? await client.query(PostgresQuery(unsafeSQL: "DROP SCHEMA \(schema) CASCADE"))
                throw error
            }
        }
    }
}
