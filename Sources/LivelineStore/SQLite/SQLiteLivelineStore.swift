import Foundation
import GRDB
import GRDBSQLite
import LivelineCore
import Synchronization

// Tests: Tests/LivelineStoreTests/SQLiteConnectionTests.swift, Tests/LivelineStoreTests/ChannelAndTraceConformanceTests.swift, Tests/LivelineStoreTests/RetentionConformanceTests.swift

/// The embedded store: one SQLite file in WAL mode.
///
/// Writes go through GRDB's single writer connection and readers run beside it. Each batch
/// runs inside one synchronous closure with cached prepared statements, which is what makes
/// ~500 events per transaction cheap.
public final class SQLiteLivelineStore: ActivityStore {
    let pool: DatabasePool
    /// How long a write waits for another connection's lock, as `PRAGMA busy_timeout` takes it.
    let busyTimeoutMilliseconds: Int
    /// How many of this store's writes hold or wait for the writer connection; see
    /// ``readHere(mayUseWriter:_:)``.
    private let writerCalls = Atomic<Int>(0)

    /// Opens (creating if needed) the database and applies missing migrations.
    public init(configuration: SQLiteStoreConfiguration) throws {
        var config = Configuration()
        busyTimeoutMilliseconds = Int((configuration.busyTimeout * 1000).rounded())
        config.busyMode = .timeout(configuration.busyTimeout)
        config.maximumReaderCount = configuration.maximumReaderCount
        let synchronous = configuration.fullSync ? "FULL" : "NORMAL"
        let cacheKiB = configuration.cacheMiB * 1024
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
            // Negative: in KiB. SQLite's own default is 2 MiB.
            try db.execute(sql: "PRAGMA cache_size = -\(cacheKiB)")
            // Temporary tables (`IN (SELECT …)`, sorts) in memory, not in files under /var/tmp.
            // The trace insert's statement journal spilled there past 64 KiB, created and
            // unlinked about every 100 ms on a trickle, until the insert stopped needing one.
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
        }
        pool = try Self.open(path: configuration.path, configuration: config, busyTimeout: configuration.busyTimeout)
        try pool.writeWithoutTransaction { db in try SQLiteSchema.migrate(db, apps: configuration.apps) }
    }

    /// Opens the pool, waiting while another process holds the file: switching a new file to
    /// WAL needs an exclusive lock, and SQLite's busy timeout does not cover that pragma.
    private static func open(path: String, configuration: Configuration, busyTimeout: TimeInterval) throws
        -> DatabasePool
    {
        let deadline = Date().addingTimeInterval(busyTimeout)
        while true {
            do {
                return try DatabasePool(path: path, configuration: configuration)
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY && Date() < deadline {
                Thread.sleep(forTimeInterval: 0.02)
            }
        }
    }

    /// A write transaction on the calling thread when the database is free, for the workers'
    /// calls made once a batch.
    ///
    /// GRDB's async `write` hands the closure to the writer's dispatch queue and resumes the
    /// task on a thread of the Swift concurrency pool: two thread wake-ups around a
    /// transaction that takes a fraction of a millisecond. At 1,000 events/s, with a batch
    /// every few milliseconds, thread switches were the translator's largest cost after the
    /// store itself. The synchronous `write` runs on the caller's thread when the writer is
    /// idle (`DispatchQueue.sync`).
    ///
    /// It never waits for another process's write lock there: that wait (up to the busy
    /// timeout) would hold one of the pool's few threads, and with them `/healthz` and the
    /// other batches. `BEGIN IMMEDIATE` is tried with no busy timeout, and when the lock is
    /// taken the transaction goes the async way, which waits on the writer's own queue.
    func writeHere<T: Sendable>(_ updates: @escaping @Sendable (Database) throws -> T) async throws -> T {
        writerCalls.add(1, ordering: .relaxed)
        defer { writerCalls.subtract(1, ordering: .relaxed) }
        if let done = try writeIfFree(updates) { return done }
        return try await pool.write(updates)
    }

    /// A write transaction the async way, on the writer's queue. Every write of this store goes
    /// through here or ``writeHere(_:)``, which count themselves in `writerCalls`.
    func write<T: Sendable>(_ updates: @Sendable (Database) throws -> T) async throws -> T {
        writerCalls.add(1, ordering: .relaxed)
        defer { writerCalls.subtract(1, ordering: .relaxed) }
        return try await pool.write(updates)
    }

    /// The transaction, on this thread; nil, with nothing done, when another connection holds
    /// the write lock.
    private func writeIfFree<T>(_ updates: (Database) throws -> T) throws -> T? {
        let restore = "PRAGMA busy_timeout = \(busyTimeoutMilliseconds)"
        return try pool.writeWithoutTransaction { db in
            try db.cachedStatement(sql: "PRAGMA busy_timeout = 0").execute()
            do {
                try db.cachedStatement(sql: "BEGIN IMMEDIATE").execute()
            } catch {
                try db.cachedStatement(sql: restore).execute()
                if let error = error as? DatabaseError, error.resultCode == .SQLITE_BUSY { return nil }
                throw error
            }
            return try Self.committing(db) {
                try db.cachedStatement(sql: restore).execute()
                return try updates(db)
            }
        }
    }

    /// Ends the transaction `BEGIN` opened: commits what `body` did, or rolls it back when
    /// `body` or the commit fails.
    ///
    /// The calls made once a batch begin and end their transactions with cached statements.
    /// GRDB's `inTransaction` compiles `BEGIN` and `COMMIT` again every time, and on a
    /// trickle, with ten events a batch, that compiling was 1.2 % of the translator's
    /// instructions (callgrind).
    private static func committing<T>(_ db: Database, _ body: () throws -> T) throws -> T {
        do {
            let result = try body()
            try db.cachedStatement(sql: "COMMIT").execute()
            return result
        } catch {
            if db.isInsideTransaction { try? db.cachedStatement(sql: "ROLLBACK").execute() }
            throw error
        }
    }

    /// A read transaction on the calling thread, for the same reason as ``writeHere(_:)``.
    ///
    /// A connection's page cache is dropped whenever another connection has committed since
    /// its last transaction: for a reader that is every batch (the writer commits each one),
    /// and often for the writer too (the sender writes to the same file). So a load on a
    /// reader and the apply on the writer each read the batch's pages through pread(2). A
    /// read the caller says no write of its own will meet (`mayUseWriter`) runs on the writer
    /// instead, when none of this store's writes holds it or waits for it: on a trickle, the
    /// batch before is stored by the time the next one loads, and the apply then finds the
    /// pages the load read. At a steady 1,000 events/s that cut the apply's CPU by about 45 %.
    /// (Another process's write does not hold the read up: in WAL mode a read takes no write
    /// lock.)
    ///
    /// Otherwise it goes to a reader: under load the pipeline stores the batch before while
    /// the next one loads, and on one connection either would wait for the other.
    func readHere<T>(mayUseWriter: Bool, _ value: (Database) throws -> T) throws -> T {
        guard mayUseWriter, writerCalls.compareExchange(expected: 0, desired: 1, ordering: .acquiring).exchanged else {
            return try pool.read(value)
        }
        defer { writerCalls.subtract(1, ordering: .releasing) }
        return try pool.writeWithoutTransaction { db in
            try db.cachedStatement(sql: "BEGIN DEFERRED").execute()
            return try Self.committing(db) { try value(db) }
        }
    }

    /// The applied schema version.
    public func schemaVersion() async throws -> Int {
        try await pool.read { db in try Int.fetchOne(db, sql: "SELECT MAX(version) FROM schema_version") ?? 0 }
    }

    // MARK: Channels

    public func recordCreatedChannel(_ channelID: String, at: Date) async throws {
        try await write { db in
            try db.execute(
                sql: "INSERT INTO created_channels (channel_id, created_ms) VALUES (?, ?) ON CONFLICT DO NOTHING",
                arguments: [channelID, at.millisecondsSince1970])
        }
    }

    public func createdChannelIDs() async throws -> Set<String> {
        try await pool.read { db in Set(try String.fetchAll(db, sql: "SELECT channel_id FROM created_channels")) }
    }

    public func forgetCreatedChannels(_ channelIDs: [String]) async throws {
        guard !channelIDs.isEmpty else { return }
        try await write { db in
            try db.execute(
                sql: "DELETE FROM created_channels WHERE channel_id IN (SELECT value FROM json_each(?))",
                arguments: [Self.json(channelIDs)])
        }
    }

    public func createChannel(_ channel: BroadcastChannel) async throws -> ChannelCreation {
        try await write { db in
            // Replaces only a deleted row, so a live channel stored by another worker wins.
            try db.execute(sql: """
                INSERT INTO channels (domain, key, channel_id, created_ms, deleted_ms) VALUES (?, ?, ?, ?, NULL)
                ON CONFLICT (domain, key) DO UPDATE SET channel_id = excluded.channel_id,
                    created_ms = excluded.created_ms, deleted_ms = NULL
                WHERE channels.deleted_ms IS NOT NULL
                """, arguments: [channel.domain, channel.key, channel.channelID, channel.createdAt.millisecondsSince1970])
            let created = db.changesCount > 0
            guard let stored = try Self.fetchChannel(db, domain: channel.domain, key: channel.key) else {
                throw StoreError.backend("channel vanished inside its transaction")
            }
            return created ? .created(stored) : .existing(stored)
        }
    }

    public func channel(domain: String, key: String) async throws -> BroadcastChannel? {
        try await pool.read { db in try Self.fetchChannel(db, domain: domain, key: key) }
    }

    public func markChannelDeleted(domain: String, key: String, at: Date) async throws -> Bool {
        try await write { db in
            guard let channelID = try String.fetchOne(db, sql: """
                UPDATE channels SET deleted_ms = ? WHERE domain = ? AND key = ? AND deleted_ms IS NULL RETURNING channel_id
                """, arguments: [at.millisecondsSince1970, domain, key])
            else { return false }
            try db.execute(sql: "DELETE FROM created_channels WHERE channel_id = ?", arguments: [channelID])
            return true
        }
    }

    public func liveChannelIDs() async throws -> Set<String> {
        try await pool.read { db in
            Set(try String.fetchAll(db, sql: "SELECT channel_id FROM channels WHERE deleted_ms IS NULL"))
        }
    }

    public func channelsToSweep(endedBefore: Date, startedBefore: Date, idleBefore: Date, limit: Int) async throws -> [BroadcastChannel] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT c.domain, c.key, c.channel_id, c.created_ms, c.deleted_ms
                FROM channels c LEFT JOIN activities a ON a.id = c.key AND a.domain = c.domain
                WHERE c.deleted_ms IS NULL
                  AND (a.ended_ms < ?1 OR a.started_ms < ?2
                       OR (a.id IS NULL AND c.created_ms < ?2)
                       OR (a.started_ms IS NULL AND a.ended_ms IS NULL AND COALESCE(a.last_event_ms, c.created_ms) < ?3))
                ORDER BY c.created_ms LIMIT ?4
                """, arguments: [
                    endedBefore.millisecondsSince1970, startedBefore.millisecondsSince1970, idleBefore.millisecondsSince1970, limit,
                ]
            ).map(Self.channel(from:))
        }
    }

    static func fetchChannel(_ db: Database, domain: String, key: String) throws -> BroadcastChannel? {
        let statement = try db.cachedStatement(
            sql: "SELECT domain, key, channel_id, created_ms, deleted_ms FROM channels WHERE domain = ? AND key = ?")
        return try Row.fetchOne(statement, arguments: [domain, key]).map(channel(from:))
    }

    private static func channel(from row: Row) -> BroadcastChannel {
        BroadcastChannel(
            domain: row["domain"], key: row["key"], channelID: row["channel_id"],
            createdAt: Date(millisecondsSince1970: row["created_ms"]),
            deletedAt: (row["deleted_ms"] as Int64?).map(Date.init(millisecondsSince1970:)))
    }

    // MARK: Trace

    public func appendTrace(_ entries: [TraceEntry]) async throws {
        guard !entries.isEmpty else { return }
        try await writeHere { db in try Self.insertTrace(db, entries) }
    }

    static func insertTrace(_ db: Database, _ entries: [TraceEntry]) throws {
        // Many rows to a statement: per-statement overhead, not the insert itself, was the cost
        // at one trace line per event. Each group's size is a power of two up to 128, so the
        // connection caches 8 statements; one per row count from 1 to 100 held about 3.5 MiB.
        var start = entries.startIndex
        while start < entries.endIndex {
            let remaining = entries.endIndex - start
            let size = min(1 << (Int.bitWidth - 1 - remaining.leadingZeroBitCount), traceRowsPerStatement)
            let group = entries[start..<start + size]
            try insertRows(group, with: db.cachedStatement(sql: insertTraceSQL[size.trailingZeroBitCount]), db)
            start = group.endIndex
        }
    }

    private static func insertRows(_ rows: ArraySlice<TraceEntry>, with statement: Statement, _ db: Database) throws {
        try statement.executeBoundHere(in: db) { bindings in
            var parameter: Int32 = 1
            for entry in rows {
                bindings.bind(parameter, entry.activityID)
                bindings.bind(parameter + 1, entry.at.millisecondsSince1970)
                bindings.bind(parameter + 2, entry.kind.rawValue)
                bindings.bind(parameter + 3, entry.detail)
                parameter += 4
            }
        }
    }

    private static let traceRowsPerStatement = 128

    /// `INSERT OR FAIL INTO activity_trace` for 1, 2, 4 … 128 rows, by the power of two.
    ///
    /// `OR FAIL`, because a statement of several rows that may abort on a constraint makes
    /// SQLite copy every page it touches into a statement journal first, so it could undo
    /// that statement alone: about twelve 4 KiB pages a translator batch, written into
    /// freshly allocated memory (callgrind). Under `FAIL` it keeps no journal. Nothing is
    /// lost by it: every caller runs this in a transaction it rolls back on any error.
    private static let insertTraceSQL: [String] = (0...traceRowsPerStatement.trailingZeroBitCount).map { power in
        "INSERT OR FAIL INTO activity_trace (activity_id, at_ms, kind, detail) VALUES "
            + repeatElement("(?, ?, ?, ?)", count: 1 << power).joined(separator: ", ")
    }

    public func trace(activityID: String, limit: Int) async throws -> [TraceEntry] {
        try await pool.read { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT activity_id, at_ms, kind, detail FROM (
                    SELECT * FROM activity_trace WHERE activity_id = ? ORDER BY at_ms DESC, seq DESC LIMIT ?
                ) ORDER BY at_ms, seq
                """, arguments: [activityID, max(0, limit)])
            return rows.map { row in
                TraceEntry(
                    activityID: row["activity_id"], at: Date(millisecondsSince1970: row["at_ms"]),
                    kind: TraceEntry.Kind(stored: row["kind"]), detail: row["detail"])
            }
        }
    }

    public func prune(_ cutoffs: RetentionCutoffs, limit: Int) async throws -> PruneCounts {
        var counts = PruneCounts()
        // One short write transaction a kind: the translator's and the sender's writes wait
        // for one batch at most.
        counts.traceLines = try await deleteWhere("""
            DELETE FROM activity_trace WHERE seq IN (SELECT seq FROM activity_trace WHERE at_ms < ?1 LIMIT ?2)
            """, cutoffs.traceBefore, limit)
        counts += try await write { db in
            var counts = PruneCounts()
            // Ended ones through their index; then those that stopped without an end (rare:
            // a producer that never sent one), by a scan that stops at `limit`.
            let ids = try String.fetchAll(db, sql: """
                SELECT id FROM activities WHERE ended_ms < ?1
                UNION ALL
                SELECT id FROM activities WHERE ended_ms IS NULL AND COALESCE(started_ms, last_event_ms) < ?1
                LIMIT ?2
                """, arguments: [cutoffs.activitiesBefore.millisecondsSince1970, limit])
            guard !ids.isEmpty else { return counts }
            let list = Self.json(ids)
            func delete(_ sql: String) throws -> Int {
                try db.execute(sql: sql, arguments: [list])
                return db.changesCount
            }
            counts.updateTokens = try delete("DELETE FROM update_tokens WHERE activity_id IN (SELECT value FROM json_each(?))")
            counts.channels = try delete(
                "DELETE FROM channels WHERE key IN (SELECT value FROM json_each(?)) AND deleted_ms IS NOT NULL")
            _ = try delete("DELETE FROM late_starts WHERE activity_id IN (SELECT value FROM json_each(?))")
            _ = try delete("DELETE FROM start_topics WHERE activity_id IN (SELECT value FROM json_each(?))")
            counts.activities = try delete("DELETE FROM activities WHERE id IN (SELECT value FROM json_each(?))")
            return counts
        }
        counts.pushToStartTokens = try await deleteWhere("""
            DELETE FROM push_to_start_tokens WHERE (user_id, attributes_type, device_id) IN (
                SELECT user_id, attributes_type, device_id FROM push_to_start_tokens WHERE registered_ms < ?1 LIMIT ?2)
            """, cutoffs.pushToStartTokensBefore, limit)
        counts.deadLetters = try await deleteWhere("""
            DELETE FROM dead_letters WHERE id IN (SELECT id FROM dead_letters WHERE last_failed_ms < ?1 LIMIT ?2)
            """, cutoffs.deadLettersBefore, limit)
        counts.follows = try await deleteWhere("""
            DELETE FROM follows WHERE (user_id, topic) IN (
                SELECT f.user_id, f.topic FROM follows f
                WHERE f.followed_ms < ?1 AND NOT EXISTS (SELECT 1 FROM push_to_start_tokens p WHERE p.user_id = f.user_id)
                LIMIT ?2)
            """, cutoffs.followsBefore, limit)
        counts.auditEntries = try await deleteWhere("""
            DELETE FROM audit WHERE seq IN (SELECT seq FROM audit WHERE at_ms < ?1 LIMIT ?2)
            """, cutoffs.auditBefore, limit)
        counts.eventClaims = try await deleteWhere("""
            DELETE FROM event_claims WHERE event_id IN (SELECT event_id FROM event_claims WHERE received_ms < ?1 LIMIT ?2)
            """, cutoffs.eventClaimsBefore, limit)
        // Outcomes are kept as long as event ids: a producer asks about an event it sent lately.
        counts.eventOutcomes = try await deleteWhere("""
            DELETE FROM event_outcomes WHERE outcome_id IN (SELECT outcome_id FROM event_outcomes WHERE at_ms < ?1 LIMIT ?2)
            """, cutoffs.eventClaimsBefore, limit)
        return counts
    }

    /// Runs one `DELETE` whose `?1` is a cutoff and `?2` the batch's limit; returns its count.
    private func deleteWhere(_ sql: String, _ cutoff: Date, _ limit: Int) async throws -> Int {
        try await write { db in
            try db.execute(sql: sql, arguments: [cutoff.millisecondsSince1970, limit])
            return db.changesCount
        }
    }

    // MARK: Preferences and reconciliation

    public func preferences(userID: String) async throws -> UserPreferences {
        try await pool.read { db in try Self.fetchPreferences(db, userID: userID) }
    }

    static func fetchPreferences(_ db: Database, userID: String) throws -> UserPreferences {
        let statement = try db.cachedStatement(
            sql: "SELECT activities_enabled, frequent_pushes_enabled FROM preferences WHERE user_id = ?")
        guard let row = try Row.fetchOne(statement, arguments: [userID]) else { return .defaults }
        return UserPreferences(activitiesEnabled: row["activities_enabled"], frequentPushesEnabled: row["frequent_pushes_enabled"])
    }

    public func setPreferences(_ preferences: UserPreferences, userID: String) async throws {
        try await write { db in
            try db.execute(sql: """
                INSERT INTO preferences (user_id, activities_enabled, frequent_pushes_enabled) VALUES (?, ?, ?)
                ON CONFLICT (user_id) DO UPDATE SET activities_enabled = excluded.activities_enabled,
                    frequent_pushes_enabled = excluded.frequent_pushes_enabled
                """, arguments: [userID, preferences.activitiesEnabled, preferences.frequentPushesEnabled])
        }
    }

    public func activity(id: String) async throws -> ActivityRecord? {
        try await pool.read { db in try Self.fetchActivity(db, id: id) }
    }

    /// The activity columns in the order ``activity(from:)`` reads them.
    static let activityColumns = """
        a.id, a.domain, a.attributes_type, a.user_id, a.attributes, a.content_state, a.last_event_ms, a.started_ms,
        a.ended_ms, a.end_reason, a.budget_spent, a.budget_window_ms, a.last_event_id, a.last_status, a.last_push_s,
        a.push_to_start_sent_ms
        """

    static func fetchActivity(_ db: Database, id: String) throws -> ActivityRecord? {
        let statement = try db.cachedStatement(sql: "SELECT \(activityColumns) FROM activities a WHERE a.id = ?")
        return try Row.fetchOne(statement, arguments: [id]).flatMap(activity(from:))
    }

    /// Reads ``activityColumns`` from the start of a row; `nil` when the row has no activity.
    static func activity(from row: Row) -> ActivityRecord? {
        guard let id: String = row[0] else { return nil }
        func date(_ index: Int) -> Date? { (row[index] as Int64?).map(Date.init(millisecondsSince1970:)) }
        return ActivityRecord(
            id: id, domain: row[1], attributesType: row[2], userID: row[3], attributes: row[4], contentState: row[5],
            lastEventAt: date(6), startedAt: date(7), endedAt: date(8), endReason: row[9],
            budget: PriorityBudget(spent: row[10], windowStart: date(11)), lastEventID: row[12], lastStatus: row[13],
            lastPushTimestamp: row[14], pushToStartSentAt: date(15))
    }
}

/// Values bound with SQLite's own calls, for ``GRDB/Statement/executeBoundHere(in:_:)``. The
/// first failure is kept and the binds after it do nothing.
struct StatementBindings {
    fileprivate let statement: SQLiteStatement
    fileprivate var code = SQLITE_OK

    /// Binds a copy of the text (SQLITE_TRANSIENT), so it may go when this returns; nil binds NULL.
    mutating func bind(_ parameter: Int32, _ text: String?) {
        guard code == SQLITE_OK else { return }
        guard var text else {
            code = sqlite3_bind_null(statement, parameter)
            return
        }
        code = text.withUTF8 { [statement] utf8 in
            guard let base = utf8.baseAddress else { return sqlite3_bind_text(statement, parameter, "", 0, nil) }
            return base.withMemoryRebound(to: CChar.self, capacity: utf8.count) { characters in
                sqlite3_bind_text(statement, parameter, characters, Int32(utf8.count), Self.transient)
            }
        }
    }

    /// Binds the number; nil binds NULL.
    mutating func bind(_ parameter: Int32, _ number: Int64?) {
        guard code == SQLITE_OK else { return }
        code = number.map { sqlite3_bind_int64(statement, parameter, $0) } ?? sqlite3_bind_null(statement, parameter)
    }

    /// SQLITE_TRANSIENT, which the C header defines as a cast the importer does not bring over.
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
}

extension Statement {
    /// Binds with SQLite's own calls on this cached statement, steps it once to completion and
    /// resets it: for the statements run for every push or event, which return no rows.
    ///
    /// Through GRDB (`StatementArguments` of `DatabaseValue`s, then `execute(arguments:)`, which
    /// checks and binds them one by one) binding cost more than SQLite's own work: 11,600
    /// instructions a push for the sender's trace rows, about 25,000 an event for the
    /// translator's upsert of its activity. No observer watches these tables, which is what
    /// GRDB's execution would also have told; `changesCount` still reads SQLite's count.
    func executeBoundHere(in db: Database, _ bind: (inout StatementBindings) -> Void) throws {
        let raw = sqliteStatement
        sqlite3_reset(raw)
        var bindings = StatementBindings(statement: raw)
        bind(&bindings)
        var code = bindings.code
        if code == SQLITE_OK { code = sqlite3_step(raw) }
        let message = code == SQLITE_DONE ? nil : String(cString: sqlite3_errmsg(db.sqliteConnection))
        sqlite3_reset(raw)
        guard code == SQLITE_DONE else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: sql)
        }
    }
}
