import PostgresNIO
import Synchronization

// Tests: Tests/LivelineStoreTests/PostgresConnectionLossTests.swift

/// Fails the operations running on a pooled connection when that connection closes, with one
/// `closeFuture` callback per connection. A callback per operation would stay registered for
/// as long as the connection lives: millions of them on a busy worker's connection.
final class ConnectionCloseWatch: Sendable {
    /// One operation's place in the watch, for ``finished(_:)``.
    struct Entry: Sendable {
        fileprivate let connection: ObjectIdentifier
        fileprivate let key: UInt64
    }

    private struct State {
        var nextKey: UInt64 = 0
        /// Per watched connection, the operations running on it and how to fail each.
        var running: [ObjectIdentifier: [UInt64: @Sendable (any Error) -> Void]] = [:]
    }

    private let state = Mutex(State())

    /// Calls `fail` if `connection` closes before ``finished(_:)`` is called with the entry.
    func started(on connection: PostgresConnection, fail: @escaping @Sendable (any Error) -> Void) -> Entry {
        let id = ObjectIdentifier(connection)
        let (key, firstOnConnection) = state.withLock { state in
            let key = state.nextKey
            state.nextKey += 1
            let first = state.running[id] == nil
            state.running[id, default: [:]][key] = fail
            return (key, first)
        }
        if firstOnConnection {
            connection.closeFuture.whenComplete { [self] _ in
                let running = state.withLock { $0.running.removeValue(forKey: id) } ?? [:]
                for fail in running.values { fail(StoreError.backend("the connection to PostgreSQL closed")) }
            }
        }
        return Entry(connection: id, key: key)
    }

    /// The operation ended; its connection stays watched while it is open.
    func finished(_ entry: Entry) {
        state.withLock { _ = $0.running[entry.connection]?.removeValue(forKey: entry.key) }
    }

    /// Operations now waiting on a connection's close (for tests).
    var runningCount: Int { state.withLock { $0.running.values.reduce(0) { $0 + $1.count } } }
    /// Connections with a close callback (for tests): at most the pool's.
    var watchedCount: Int { state.withLock { $0.running.count } }
}
