import Foundation

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

    public init(path: String, busyTimeout: TimeInterval = 5, fullSync: Bool = false, maximumReaderCount: Int = 4) {
        self.path = path
        self.busyTimeout = busyTimeout
        self.fullSync = fullSync
        self.maximumReaderCount = maximumReaderCount
    }
}
