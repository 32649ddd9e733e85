import Foundation
import LivelineLogging
import Logging
import PostgresNIO

// Tests: Tests/LivelineStoreTests/PostgresConnectionLossTests.swift, Tests/LivelineStoreTests/MigrationTests.swift, Tests/LivelineStoreTests/ConcurrencyConformanceTests.swift

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
    /// Fails what runs on a connection that closes (see ``onConnection(_:)``).
    let closeWatch = ConnectionCloseWatch()
    /// Whose rows a store from before apps were kept apart holds (``migrate()``).
    let apps: AppLayout

    /// - Parameters:
    ///   - client: a client whose `run()` is running; its `search_path` picks the schema.
    ///   - logger: where queries log (at debug and below).
    ///   - conflictRetries: retries of a transaction that PostgreSQL aborted as a deadlock victim.
    ///   - apps: whose rows a store from before apps were kept apart holds, for its migration.
    public init(client: PostgresClient, logger: Logger, conflictRetries: Int = 3, apps: AppLayout = .standard) {
        self.client = client
        self.logger = logger
        self.conflictRetries = conflictRetries
        self.apps = apps
    }

    /// Applies missing migrations. Safe to call from several processes at once.
    public func migrate() async throws {
        let (logger, apps) = (self.logger, self.apps)
        try await transaction { connection in try await PostgresSchema.migrate(on: connection, apps: apps, logger: logger) }
    }

    /// The applied schema version.
    public func schemaVersion() async throws -> Int {
        try await first(Int64.self, "SELECT COALESCE(MAX(version), 0)::bigint FROM schema_version").map(Int.init) ?? 0
    }

    /// Runs `body` in a transaction, again if PostgreSQL picked it as a deadlock victim:
    /// the whole batch is rolled back then, so running it again is safe.
    func transaction<Result: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        var attempt = 0
        while true {
            do {
                return try await onConnection { connection in
                    try await Self.inTransaction(on: connection, logger: self.logger, body)
                }
            } catch let error where attempt < conflictRetries && Self.isConflict(error) {
                attempt += 1
                logger.debug("retrying store transaction after a conflict", metadata: StoreLogKey.metadata([.attempt: "\(attempt)"]))
            }
        }
    }

    /// Runs `query` and returns every row: the rows are read while the connection is held.
    @discardableResult
    func query(_ query: PostgresQuery) async throws -> Rows {
        try await onConnection { connection in
            Rows(rows: try await connection.query(query, logger: self.logger).collect())
        }
    }

    /// A query's rows, read to the end.
    struct Rows: Sendable {
        let rows: [PostgresRow]

        func decode<each Column: PostgresDecodable>(_ columns: (repeat each Column).Type) throws -> [(repeat each Column)] {
            try rows.map { try $0.decode(columns) }
        }
    }

    /// Runs `body` on a pooled connection, and fails it when the connection closes first.
    ///
    /// postgres-nio 1.33 never answers a query written to a connection that has just
    /// closed: the write is dropped, and the query's promise with it. A store outage could
    /// then leave a worker waiting forever: the sender on the ROLLBACK that its
    /// `withTransaction` sends after the error saying the connection closed, the translator
    /// on a query it began as the connection went. Neither could drain on SIGTERM (the fault
    /// suite's store-outage case, about one run in eight). So every use of a connection also
    /// ends when the connection closes; a query left unanswered stays behind in its task.
    func onConnection<Result: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await client.withConnection { connection in
            let outcome = connection.eventLoop.makePromise(of: Result.self)
            // A promise completes once; whichever comes second is ignored.
            let watched = self.closeWatch.started(on: connection) { outcome.fail($0) }
            defer { self.closeWatch.finished(watched) }
            let work = Task {
                do { outcome.succeed(try await body(connection)) } catch { outcome.fail(error) }
            }
            return try await withTaskCancellationHandler {
                try await outcome.futureResult.get()
            } onCancel: {
                work.cancel()
            }
        }
    }

    /// BEGIN, `body`, COMMIT; ROLLBACK when `body` throws and the connection is still there
    /// (when it is gone, the server has rolled the transaction back itself).
    static func inTransaction<Result: Sendable>(
        on connection: PostgresConnection, logger: Logger, _ body: @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await connection.query("BEGIN;", logger: logger)
        let value: Result
        do {
            value = try await body(connection)
        } catch {
            if !connection.isClosed { _ = try? await connection.query("ROLLBACK;", logger: logger) }
            throw error
        }
        // A COMMIT that fails ends the transaction too; there is nothing to roll back.
        try await connection.query("COMMIT;", logger: logger)
        return value
    }

    /// Whether PostgreSQL aborted the transaction as a deadlock victim or a serialization
    /// failure, so running it again is safe.
    static func isConflict(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError, let state = error.serverInfo?[.sqlState] else { return false }
        return state == "40P01" || state == "40001"
    }

    /// The first column of the first row, or `nil`.
    func first<Value: PostgresDecodable & Sendable>(_ type: Value.Type, _ query: PostgresQuery) async throws -> Value? {
        for value in try await self.query(query).decode(Value.self) {
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
