import Foundation
import GRDB

extension SQLiteLivelineStore {
    public func loadSnapshots(_ requests: [SnapshotRequest]) async throws -> [String: ActivitySnapshot] {
        guard !requests.isEmpty else { return [:] }
        return try await pool.read { db in
            // One statement for the activity, the start token and the preferences, then the
            // tokens only where a row exists; columns are read by index, which is much cheaper
            // than by name at 500 rows a batch.
            let joined = try db.cachedStatement(sql: """
                SELECT \(Self.activityColumns),
                       p.token, p.registered_ms, p.used_ms, pr.activities_enabled, pr.frequent_pushes_enabled
                FROM (SELECT ?1 AS id, ?2 AS user_id, ?3 AS attributes_type) AS i
                LEFT JOIN activities a ON a.id = i.id
                LEFT JOIN push_to_start_tokens p ON p.user_id = i.user_id AND p.attributes_type = i.attributes_type
                LEFT JOIN preferences pr ON pr.user_id = i.user_id
                """)
            let tokens = try db.cachedStatement(
                sql: "SELECT device_id, token, registered_ms FROM update_tokens WHERE activity_id = ? ORDER BY device_id")
            var snapshots: [String: ActivitySnapshot] = [:]
            snapshots.reserveCapacity(requests.count)
            for request in requests where snapshots[request.activityID] == nil {
                guard let row = try Row.fetchOne(
                    joined, arguments: [request.activityID, request.userID, request.attributesType])
                else { continue }
                let activity = Self.activity(from: row)
                var updateTokens: [UpdateToken] = []
                if let activity, !(activity.status == .pending && activity.userID != request.userID) {
                    updateTokens = try Row.fetchAll(tokens, arguments: [request.activityID]).map { row in
                        UpdateToken(
                            activityID: request.activityID, deviceID: row[0], token: row[1],
                            registeredAt: Date(millisecondsSince1970: row[2]))
                    }
                }
                var pushToStart: PushToStartToken?
                if let token: String = row[16] {
                    pushToStart = PushToStartToken(
                        userID: request.userID, attributesType: request.attributesType, token: token,
                        registeredAt: Date(millisecondsSince1970: row[17]),
                        usedAt: (row[18] as Int64?).map(Date.init(millisecondsSince1970:)))
                }
                var preferences = UserPreferences.defaults
                if let enabled: Bool = row[19] {
                    preferences = UserPreferences(activitiesEnabled: enabled, frequentPushesEnabled: row[20])
                }
                snapshots[request.activityID] = ActivitySnapshot(
                    activity: activity, updateTokens: updateTokens, pushToStartToken: pushToStart, preferences: preferences)
            }
            return snapshots
        }
    }

    public func applyChanges(_ changes: [ActivityChange], trace: [TraceEntry]) async throws -> [ChangeOutcome] {
        guard !changes.isEmpty || !trace.isEmpty else { return [] }
        return try await pool.write { db in
            // A pending row made by another user's registration: the event's user owns the
            // activity, so that user's tokens must never receive its pushes.
            let purge = try db.cachedStatement(sql: """
                DELETE FROM update_tokens WHERE activity_id = ?1 AND EXISTS (
                    SELECT 1 FROM activities WHERE id = ?1 AND last_event_ms IS NULL AND user_id <> ?2)
                """)
            // The condition sits in the upsert itself so check and write are one statement.
            let upsert = try db.cachedStatement(sql: """
                INSERT INTO activities (id, domain, attributes_type, user_id, attributes, content_state,
                                        last_event_ms, started_ms, ended_ms, end_reason,
                                        last_event_id, last_status, last_push_s, push_to_start_sent_ms)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
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
            let endedCheck = try db.cachedStatement(sql: "SELECT ended_ms IS NOT NULL FROM activities WHERE id = ?")
            var outcomes: [ChangeOutcome] = []
            outcomes.reserveCapacity(changes.count)
            for change in changes {
                try purge.execute(arguments: [change.activityID, change.userID])
                try upsert.execute(arguments: [
                    change.activityID, change.domain, change.attributesType, change.userID, change.attributes,
                    change.contentState, change.eventTime.millisecondsSince1970,
                    change.end?.at.millisecondsSince1970, change.end?.reason,
                    change.eventID, change.status, change.pushTimestamp, change.pushToStartSentAt?.millisecondsSince1970,
                ])
                if db.changesCount > 0 {
                    outcomes.append(.applied)
                } else {
                    let ended = try Bool.fetchOne(endedCheck, arguments: [change.activityID]) ?? false
                    outcomes.append(ended ? .ended : .stale)
                }
            }
            try Self.insertTrace(db, trace)
            return outcomes
        }
    }

    public func spendPriorityBudget(_ activityIDs: [String], at now: Date, window: TimeInterval) async throws -> [String: Int] {
        guard !activityIDs.isEmpty else { return [:] }
        let nowMS = now.millisecondsSince1970
        let windowStartLimit = nowMS - Int64((window * 1000).rounded())
        return try await pool.write { db in
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
    }

    public func markPushToStartTokenUsed(userID: String, attributesType: String, token: String, at: Date) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: """
                UPDATE push_to_start_tokens SET used_ms = ?
                WHERE user_id = ? AND attributes_type = ? AND token = ? AND used_ms IS NULL
                """, arguments: [at.millisecondsSince1970, userID, attributesType, token])
            return db.changesCount > 0
        }
    }
}
