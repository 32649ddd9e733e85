import Foundation
import LivelineStore
import Logging
import PostgresNIO
import ServiceLifecycle

// Tests: Tests/LivelineRuntimeTests/SettingsTests.swift, Tests/LivelineRuntimeTests/LivelineExecutableTests.swift

/// Where activity state lives: one SQLite file (one node) or PostgreSQL (several nodes).
public enum StoreLocation: Sendable, CustomStringConvertible {
    case sqlite(path: String)
    case postgres(url: String)

    /// Parses `sqlite:<path>` or `postgres://…` / `postgresql://…`.
    public init(url: String) throws {
        if url.hasPrefix("sqlite:") {
            let path = String(url.dropFirst("sqlite:".count)).replacingOccurrences(of: "//", with: "", options: .anchored)
            guard !path.isEmpty else { throw SettingsError("liveline.store.url: sqlite: needs a file path") }
            self = .sqlite(path: path)
        } else if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
            self = .postgres(url: url)
        } else {
            throw SettingsError("liveline.store.url must start with sqlite: or postgres://")
        }
    }

    public var description: String {
        switch self {
        case .sqlite(let path): "sqlite:\(path)"
        case .postgres: "postgres (url redacted)"
        }
    }

    /// Opens the store, migrates it, runs `body` with it, and closes what it opened. With
    /// `retry`, a PostgreSQL that does not answer yet is waited for. `sqliteCacheMiB` is each
    /// SQLite connection's page cache (``SQLiteStoreConfiguration/cacheMiB``); SQLite's own default.
    /// `apps` says whose rows a store from before apps were kept apart holds (``LivelineSettings/apps``).
    public func withStore<T: Sendable>(
        logger: Logger, retry: StartupRetry? = nil, sqliteCacheMiB: Int = 2, apps: AppLayout = .standard,
        _ body: (any ActivityStore) async throws -> T
    ) async throws -> T {
        switch self {
        case .sqlite(let path):
            let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            return try await body(try SQLiteLivelineStore(configuration: .init(path: path, cacheMiB: sqliteCacheMiB, apps: apps)))
        case .postgres(let url):
            let client = PostgresClient(
                configuration: try PostgresStoreConfiguration(url: url).clientConfiguration, backgroundLogger: logger)
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await client.run() }
                defer { group.cancelAll() }
                let store = PostgresLivelineStore(client: client, logger: logger, apps: apps)
                if let retry {
                    try await retry.run("store (PostgreSQL)", logger: logger) { try await store.migrate() }
                } else {
                    try await store.migrate()
                }
                return try await body(store)
            }
        }
    }
}
