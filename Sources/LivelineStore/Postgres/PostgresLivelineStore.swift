import Foundation
import LivelineLogging
import Logging
import PostgresNIO

/// The store for several nodes: PostgreSQL through postgres-nio's `PostgresClient`.
///
/// The client is a `Service`: run it (in a `ServiceGroup`, or `client.run()` in a task) before
/// calling ``migrate()`` or any operation. Each batch is one transaction whose statements
/// take arrays (`unnest`), so 500 events cost a handful of round-trips.
public final class PostgresLivelineStore: ActivityStore {
    let client: PostgresClient
    let logger: Logger
    /// How often a transaction that lost a deadlock or serialization race is run again.
    let conflictRetries: Int

    /// - Parameters:
    ///   - client: a client whose `run()` is running; its `search_path` picks the schema.
    ///   - logger: where queries log (at debug and below).
    ///   - conflictRetries: retries of a transaction that PostgreSQL aborted as a deadlock victim.
    public init(client: PostgresClient, logger: Logger, conflictRetries: Int = 3) {
        self.client = client
        self.logger = logger
        self.conflictRetries = conflictRetries
    }

    /// Applies missing migrations. Safe to call from several processes at once.
    public func migrate() async throws {
        try await PostgresSchema.migrate(client: client, logger: logger)
    }

    /// The applied schema version.
    public func schemaVersion() async throws -> Int {
        try await first(Int64.self, "SELECT COALESCE(MAX(version), 0)::bigint FROM schema_version").map(Int.init) ?? 0
    }

    /// Runs `body` in a transaction, again if PostgreSQL picked it as a deadlock victim:
    /// the whole batch is rolled back then, so running it again is safe.
    func transaction<Result: Sendable>(
        _ body: @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        var attempt = 0
        while true {
            do {
                return try await client.withTransaction(logger: logger) { connection in
                    try await body(connection)
                }
            } catch let error as PostgresTransactionError where attempt < conflictRetries && Self.isConflict(error) {
                attempt += 1
                logger.debug("retrying store transaction after a conflict", metadata: StoreLogKey.metadata([.attempt: "\(attempt)"]))
            } catch let error as PostgresTransactionError {
                throw error.closureError ?? error.commitError ?? error.beginError ?? error
            }
        }
    }

    static func isConflict(_ error: PostgresTransactionError) -> Bool {
        for case let error as PSQLError in [error.closureError, error.commitError].compactMap({ $0 }) {
            if let state = error.serverInfo?[.sqlState], state == "40P01" || state == "40001" { return true }
        }
        return false
    }

    /// The first column of the first row, or `nil`.
    func first<Value: PostgresDecodable & Sendable>(_ type: Value.Type, _ query: PostgresQuery) async throws -> Value? {
        for try await value in try await client.query(query, logger: logger).decode(Value.self) {
            return value
        }
        return nil
    }

    /// The first column of the first row on a transaction's connection, or `nil`.
    static func first<Value: PostgresDecodable & Sendable>(
        _ type: Value.Type, _ query: PostgresQuery, on connection: PostgresConnection, logger: Logger
    ) async throws -> Value? {
        for try await value in try await connection.query(query, logger: logger).decode(Value.self) {
            return value
        }
        return nil
    }
}

extension Date {
    init?(millisecondsSince1970 ms: Int64?) {
        guard let ms else { return nil }
        self.init(millisecondsSince1970: ms)
    }
}
