import Foundation

// Tests: Tests/LivelineStoreTests/SQLiteConnectionTests.swift

/// Settings of the embedded SQLite store.
public struct SQLiteStoreConfiguration: Sendable {
    /// The database file. Its directory must exist; `-wal` and `-shm` files appear beside it.
    public var path: String
    /// How long a writer waits for another process's lock before failing (seconds).
    public var busyTimeout: TimeInterval
    /// `synchronous = NORMAL` in WAL mode fsyncs at checkpoints only: a power loss may lose
    /// the last transactions, which RabbitMQ redelivers because they were not acked.
    /// Set to `true` for `synchronous = FULL`.
    public var fullSync: Bool
    /// Readers kept open for concurrent snapshot loads.
    public var maximumReaderCount: Int
    /// Page cache per connection, in MiB. Default 2, SQLite's own. A cache fills as the file
    /// grows and stays full, so each connection holds this much of the process's memory once
    /// the store is big enough. 32 saved the translator about 1 % of its CPU (pages re-read
    /// through pread(2) from the kernel's cache), within the noise of the shipped process's
    /// runs, and cost it 33 MiB.
    public var cacheMiB: Int
    /// Whose rows a store from before apps were kept apart holds, for its migration.
    public var apps: AppLayout

    public init(
        path: String, busyTimeout: TimeInterval = 5, fullSync: Bool = false, maximumReaderCount: Int = 4, cacheMiB: Int = 2,
        apps: AppLayout = .standard
    ) {
        self.cacheMiB = max(1, cacheMiB)
        self.apps = apps
        self.path = path
        self.busyTimeout = busyTimeout
        self.fullSync = fullSync
        self.maximumReaderCount = maximumReaderCount
    }
}
