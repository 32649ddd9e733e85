import Foundation
import GRDB
import LivelineCodecs
import LivelineCore
import LivelineModels

// Tests: Tests/LivelineStoreTests/ChangeConformanceTests.swift, Tests/LivelineStoreTests/SnapshotConformanceTests.swift, Tests/LivelineStoreTests/LateStartConformanceTests.swift

extension SQLiteLivelineStore {
    public func loadSnapshots(_ requests: [SnapshotRequest], whileWriting: Bool) async throws -> [String: StoredActivity] {
        var seen = Set<String>()
        let unique = requests.filter { seen.insert($0.activityID).inserted }
        guard !unique.isEmpty else { return [:] }
        // Four set-based statements for the whole batch, each joining a JSON array of keys
        // (json_each) to its table's primary key, instead of two statements per activity:
        // at 500 activities a batch, statement overhead was most of the load's time.
        let ids = Self.json(unique.map(\.activityID))
        let users = Self.json(Array(Set(unique.map(\.userID))))
        let startKeys = Set(unique.map { StartKey(userID: $0.userID, attributesType: $0.attributesType) })
        let starts = Self.json(pairs: startKeys.map { ($0.userID, $0.attributesType) })
        return try readHere(mayUseWriter: !whileWriting) { db in
            var activities: [String: ActivityRecord] = [:]
            let activityRows = try Row.fetchCursor(db.cachedStatement(sql: """
                SELECT \(Self.activityColumns)
                FROM json_each(?) AS j JOIN activities a ON a.id = j.value
                """), arguments: [ids])
            while let row = try activityRows.next() {
                if let activity = Self.activity(from: row) { activities[activity.id] = activity }
            }

            var tokens: [String: [UpdateToken]] = [:]
            let tokenRows = try Row.fetchCursor(db.cachedStatement(sql: """
                SELECT t.activity_id, t.device_id, t.token, t.registered_ms, t.environment, t.locale, t.content_version
                FROM json_each(?) AS j JOIN update_tokens t ON t.activity_id = j.value
                ORDER BY t.activity_id, t.device_id
                """), arguments: [ids])
            while let row = try tokenRows.next() {
                let activityID: String = row[0]
                tokens[activityID, default: []].append(UpdateToken(
                    activityID: activityID, deviceID: row[1], token: row[2], registeredAt: Date(millisecondsSince1970: row[3]),
                    environment: APNsEnvironment(stored: row[4]), locale: row[5], contentVersion: row[6]))
            }

            var pushToStart: [StartKey: [PushToStartToken]] = [:]
            let startRows = try Row.fetchCursor(db.cachedStatement(sql: """
                SELECT \(Self.pushToStartColumns)
                FROM json_each(?) AS j
                JOIN push_to_start_tokens p ON p.user_id = j.value ->> 0 AND p.attributes_type = j.value ->> 1
                ORDER BY p.user_id, p.attributes_type, p.device_id
                """), arguments: [starts])
            while let row = try startRows.next() {
                let token = Self.pushToStartToken(from: row)
                pushToStart[StartKey(userID: token.userID, attributesType: token.attributesType), default: []].append(token)
            }

            var preferences: [String: UserPreferences] = [:]
            let preferenceRows = try Row.fetchCursor(db.cachedStatement(sql: """
                SELECT pr.user_id, pr.activities_enabled, pr.frequent_pushes_enabled
                FROM json_each(?) AS j JOIN preferences pr ON pr.user_id = j.value
                """), arguments: [users])
            while let row = try preferenceRows.next() {
                preferences[row[0]] = UserPreferences(activitiesEnabled: row[1], frequentPushesEnabled: row[2])
            }

            var snapshots: [String: StoredActivity] = [:]
            snapshots.reserveCapacity(unique.count)
            for request in unique {
                let activity = activities[request.activityID]
                // A pending row another user registered: its tokens are not this user's.
                let ownsTokens = activity.map { !($0.status == .pending && $0.userID != request.userID) } ?? false
                snapshots[request.activityID] = StoredActivity(
                    activity: activity,
                    updateTokens: ownsTokens ? tokens[request.activityID] ?? [] : [],
                    pushToStartTokens: pushToStart[StartKey(userID: request.userID, attributesType: request.attributesType)] ?? [],
                    preferences: preferences[request.userID] ?? .defaults)
            }
            return snapshots
        }
    }

    private struct StartKey: Hashable {
        var userID: String
        var attributesType: String
    }

    /// A JSON array of strings, the argument the set-based statements unpack with `json_each`.
    ///
    /// Written by hand: `JSONEncoder` for these arrays was 3% of the translator's CPU.
    static func json(_ keys: [String]) -> String {
        var writer = JSONWriter(capacity: keys.reduce(2) { $0 + $1.utf8.count + 3 })
        writer.raw("[")
        for (index, key) in keys.enumerated() {
            if index > 0 { writer.raw(",") }
            writer.string(key)
        }
        writer.raw("]")
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// A JSON array of two-string arrays, for statements keyed by a pair.
    static func json(pairs: [(String, String)]) -> String {
        var writer = JSONWriter(capacity: pairs.reduce(2) { $0 + $1.0.utf8.count + $1.1.utf8.count + 8 })
        writer.raw("[")
        for (index, pair) in pairs.enumerated() {
            writer.raw(index > 0 ? ",[" : "[")
            writer.string(pair.0)
            writer.raw(",")
            writer.string(pair.1)
            writer.raw("]")
        }
        writer.raw("]")
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    public func applyChanges(_ changes: [ActivityChange], trace: [TraceEntry]) async throws -> [ChangeOutcome] {
        guard !changes.isEmpty || !trace.isEmpty else { return [] }
        return try await writeHere { db in try Self.apply(changes, trace: trace, in: db) }
    }

    /// One transaction for both: the pages the changes wrote are written to the WAL once.
    public func applyChanges(_ changes: [ActivityChange], trace: [TraceEntry], spending: BudgetDemands) async throws
        -> (outcomes: [ChangeOutcome], spent: [String: Int])
    {
        guard !changes.isEmpty || !trace.isEmpty || !spending.demands.isEmpty else { return ([], [:]) }
        return try await writeHere { db in
            let outcomes = try Self.apply(changes, trace: trace, in: db)
            let spent = try Self.spend(spending.due(after: outcomes), at: spending.at, window: spending.window, in: db)
            return (outcomes, spent)
        }
    }

    private static func apply(_ changes: [ActivityChange], trace: [TraceEntry], in db: Database) throws -> [ChangeOutcome] {
        // A pending row made by another user's registration: the event's user owns the
        // activity, so that user's tokens must never receive its pushes. One statement
        // for the batch, before any change makes the rows active.
        if !changes.isEmpty {
            try db.cachedStatement(sql: """
                DELETE FROM update_tokens WHERE activity_id IN (
                    SELECT a.id FROM json_each(?) AS j JOIN activities a ON a.id = j.value ->> 0
                    WHERE a.last_event_ms IS NULL AND a.user_id <> j.value ->> 1)
                """).execute(arguments: [Self.json(pairs: changes.map { ($0.activityID, $0.userID) })])
        }
        // The condition sits in the upsert itself so check and write are one statement.
        let upsert = try db.cachedStatement(sql: """
            INSERT INTO activities (id, domain, attributes_type, user_id, attributes, content_state,
                                    last_event_ms, started_ms, ended_ms, end_reason,
                                    last_event_id, last_status, last_push_s, push_to_start_sent_ms)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?14, ?8, ?9, ?10, ?11, ?12, ?13)
            ON CONFLICT (id) DO UPDATE SET
                domain = excluded.domain,
                attributes_type = excluded.attributes_type,
                user_id = CASE WHEN activities.last_event_ms IS NULL THEN excluded.user_id ELSE activities.user_id END,
                attributes = COALESCE(excluded.attributes, activities.attributes),
                content_state = excluded.content_state,
                last_event_ms = excluded.last_event_ms,
                started_ms = COALESCE(activities.started_ms, excluded.started_ms),
                ended_ms = excluded.ended_ms,
                end_reason = excluded.end_reason,
                last_event_id = excluded.last_event_id,
                last_status = excluded.last_status,
                last_push_s = COALESCE(excluded.last_push_s, activities.last_push_s),
                push_to_start_sent_ms = COALESCE(activities.push_to_start_sent_ms, excluded.push_to_start_sent_ms)
            WHERE activities.ended_ms IS NULL
              AND (activities.last_event_ms IS NULL OR activities.last_event_ms < excluded.last_event_ms)
            """)
        let missedCheck = try db.cachedStatement(sql: "SELECT ended_ms IS NOT NULL, last_event_id FROM activities WHERE id = ?")
        var outcomes: [ChangeOutcome] = []
        outcomes.reserveCapacity(changes.count)
        for change in changes {
            try upsert.executeBoundHere(in: db) { bindings in
                bindings.bind(1, change.activityID)
                bindings.bind(2, change.domain)
                bindings.bind(3, change.attributesType)
                bindings.bind(4, change.userID)
                bindings.bind(5, change.attributes)
                bindings.bind(6, change.contentState)
                bindings.bind(7, change.eventTime.millisecondsSince1970)
                bindings.bind(8, change.end?.at.millisecondsSince1970)
                bindings.bind(9, change.end?.reason)
                bindings.bind(10, change.eventID)
                bindings.bind(11, change.status)
                bindings.bind(12, change.pushTimestamp)
                bindings.bind(13, change.pushToStartSentAt?.millisecondsSince1970)
                bindings.bind(14, change.startedAt?.millisecondsSince1970)
            }
            if db.changesCount > 0 {
                outcomes.append(.applied)
                if let start = change.sharedStart { try Self.recordStart(start, of: change.activityID, in: db) }
            } else {
                let row = try Row.fetchOne(missedCheck, arguments: [change.activityID])
                let stored = StoredEvent(ended: row?[0] ?? false, eventID: row?[1])
                outcomes.append(stored.outcome(missing: change))
            }
        }
        try Self.insertTrace(db, trace)
        return outcomes
    }

    public func spendPriorityBudget(_ activityIDs: [String], at now: Date, window: TimeInterval) async throws -> [String: Int] {
        guard !activityIDs.isEmpty else { return [:] }
        return try await writeHere { db in try Self.spend(activityIDs, at: now, window: window, in: db) }
    }

    private static func spend(_ activityIDs: [String], at now: Date, window: TimeInterval, in db: Database) throws -> [String: Int] {
        guard !activityIDs.isEmpty else { return [:] }
        let nowMS = now.millisecondsSince1970
        let windowStartLimit = nowMS - Int64((window * 1000).rounded())
        let spend = try db.cachedStatement(sql: """
            UPDATE activities SET
                budget_spent = CASE WHEN budget_window_ms IS NULL OR budget_window_ms <= ?2 THEN 1 ELSE budget_spent + 1 END,
                budget_window_ms = CASE WHEN budget_window_ms IS NULL OR budget_window_ms <= ?2 THEN ?3 ELSE budget_window_ms END
            WHERE id = ?1
            RETURNING budget_spent
            """)
        var spent: [String: Int] = [:]
        for id in activityIDs {
            if let count = try Int.fetchOne(spend, arguments: [id, windowStartLimit, nowMS]) {
                spent[id] = count
            }
        }
        return spent
    }

    public func audience(
        topics: [String], attributesType: String, of activityID: String?, after: AudiencePosition?, limit: Int
    ) async throws -> [PushToStartToken] {
        guard !topics.isEmpty, limit > 0 else { return [] }
        // A page walks the tokens in key order from the position, and looks each one's follows
        // up by key: it costs its own rows. Two statements, not `(?4 IS NULL OR …)`, so the
        // position is a range on the key; and a lookup, not `IN (SELECT … FROM follows)`, which
        // gathered every follower of the topics again for each page.
        let position = after == nil ? "" : "AND p.user_id >= ?4 AND (p.user_id > ?4 OR p.device_id > ?5)"
        return try await pool.read { db in
            try Row.fetchAll(db.cachedStatement(sql: """
                SELECT \(Self.pushToStartColumns)
                FROM push_to_start_tokens p
                WHERE p.attributes_type = ?1
                  AND EXISTS (SELECT 1 FROM follows f WHERE f.user_id = p.user_id AND f.topic IN (SELECT value FROM json_each(?2)))
                  AND NOT EXISTS (SELECT 1 FROM preferences pr WHERE pr.user_id = p.user_id AND pr.activities_enabled = 0)
                  AND NOT EXISTS (SELECT 1 FROM late_starts l
                                  WHERE l.activity_id = ?3 AND l.user_id = p.user_id AND l.device_id = p.device_id)
                  \(position)
                ORDER BY p.user_id, p.attributes_type, p.device_id
                LIMIT ?6
                """), arguments: [attributesType, Self.json(topics), activityID, after?.userID, after?.deviceID, limit])
                .map { Self.pushToStartToken(from: $0) }
        }
    }

    private static func recordStart(_ start: ActivityChange.SharedStart, of activityID: String, in db: Database) throws {
        let insert = try db.cachedStatement(sql: """
            INSERT INTO start_topics (topic, activity_id, audience_read_ms) VALUES (?, ?, ?) ON CONFLICT DO NOTHING
            """)
        for topic in start.topics {
            try insert.execute(arguments: [topic, activityID, start.audienceReadAt.millisecondsSince1970])
        }
    }

    public func claimLateStarts(now: Date, startedAfter: Date, limit: Int) async throws -> [LateStart] {
        let nowMS = now.millisecondsSince1970
        let cutoff = startedAfter.millisecondsSince1970
        // Every translator asks every few seconds: the write lock is taken only when there is
        // something to claim or to drop.
        let due = try await pool.read { db in
            try Bool.fetchOne(db, sql: """
                SELECT EXISTS (SELECT 1 FROM late_starts WHERE claimed_ms IS NULL)
                    OR EXISTS (SELECT 1 FROM start_topics s JOIN activities a ON a.id = s.activity_id
                               WHERE a.ended_ms IS NOT NULL OR a.started_ms <= ?)
                """, arguments: [cutoff]) ?? false
        }
        guard due else { return [] }
        return try await write { db in
            for table in ["late_starts", "start_topics"] {
                try db.execute(sql: """
                    DELETE FROM \(table) WHERE activity_id IN (
                        SELECT a.id FROM activities a WHERE a.id IN (SELECT activity_id FROM \(table))
                          AND (a.ended_ms IS NOT NULL OR a.started_ms <= ?))
                    """, arguments: [cutoff])
            }
            let rows = try Row.fetchAll(db, sql: """
                SELECT l.activity_id, l.user_id, l.device_id, p.token IS NOT NULL
                       AND NOT EXISTS (SELECT 1 FROM preferences pr WHERE pr.user_id = l.user_id AND pr.activities_enabled = 0),
                       \(Self.pushToStartColumns)
                FROM late_starts l
                JOIN activities a ON a.id = l.activity_id
                LEFT JOIN push_to_start_tokens p
                    ON p.user_id = l.user_id AND p.attributes_type = a.attributes_type AND p.device_id = l.device_id
                WHERE l.claimed_ms IS NULL
                ORDER BY l.queued_ms, l.activity_id, l.user_id, l.device_id
                LIMIT ?
                """, arguments: [limit])
            let claim = try db.cachedStatement(sql: """
                UPDATE late_starts SET claimed_ms = ? WHERE activity_id = ? AND user_id = ? AND device_id = ?
                """)
            var starts: [LateStart] = []
            for row in rows {
                let (activityID, userID, deviceID): (String, String, String) = (row[0], row[1], row[2])
                try claim.execute(arguments: [nowMS, activityID, userID, deviceID])
                if row[3] as Bool {
                    starts.append(LateStart(activityID: activityID, token: Self.pushToStartToken(from: row, at: 4)))
                }
            }
            return starts
        }
    }

    public func releaseLateStarts(_ starts: [LateStart]) async throws {
        guard !starts.isEmpty else { return }
        try await write { db in
            let release = try db.cachedStatement(sql: """
                UPDATE late_starts SET claimed_ms = NULL WHERE activity_id = ? AND user_id = ? AND device_id = ?
                """)
            for start in starts {
                try release.execute(arguments: [start.activityID, start.token.userID, start.token.deviceID])
            }
        }
    }

    static let pushToStartColumns =
        "p.user_id, p.attributes_type, p.device_id, p.token, p.registered_ms, p.environment, p.os_version, p.locale, p.content_version"

    /// The token in ``pushToStartColumns``, read from column `first` on.
    static func pushToStartToken(from row: Row, at first: Int = 0) -> PushToStartToken {
        PushToStartToken(
            userID: row[first], attributesType: row[first + 1], deviceID: row[first + 2], token: row[first + 3],
            registeredAt: Date(millisecondsSince1970: row[first + 4]),
            environment: APNsEnvironment(stored: row[first + 5]), osVersion: row[first + 6], locale: row[first + 7],
            contentVersion: row[first + 8])
    }
}
