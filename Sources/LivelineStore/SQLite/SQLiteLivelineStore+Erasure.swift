import Foundation
import GRDB

// Tests: Tests/LivelineStoreTests/ErasureConformanceTests.swift

extension SQLiteLivelineStore {
    public func liveActivities(ofUser userID: String) async throws -> [SnapshotRequest] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT id, attributes_type FROM activities WHERE user_id = ? AND ended_ms IS NULL ORDER BY id
                """, arguments: [userID]).map { SnapshotRequest(activityID: $0[0], userID: userID, attributesType: $0[1]) }
        }
    }

    public func forgetUser(_ userID: String, sharedDomains: Set<String>) async throws -> UserErasure {
        let subscriber = "\(userID)/"
        return try await write { db in
            var erased = UserErasure()
            let ids = try String.fetchAll(db, sql: """
                SELECT id FROM activities WHERE user_id = ? AND domain NOT IN (SELECT value FROM json_each(?))
                """, arguments: [userID, Self.json(sharedDomains.sorted())])
            let activities = Self.json(ids)
            // The tokens, before they go: a dead letter's body may carry one.
            let tokens = try String.fetchAll(db, sql: """
                SELECT token FROM push_to_start_tokens WHERE user_id = ?1
                UNION SELECT token FROM update_tokens
                WHERE activity_id IN (SELECT value FROM json_each(?2)) OR substr(device_id, 1, length(?3)) = ?3
                """, arguments: [userID, activities, subscriber])
            // What names the user in a letter's body: a token, or the event's or job's userId.
            let needles = Self.json(tokens + UserErasure.naming(userID))
            let inApp = UserErasure.namingInApp(userID)
            func delete(_ sql: String, _ arguments: StatementArguments) throws -> Int {
                try db.execute(sql: sql, arguments: arguments)
                return db.changesCount
            }
            erased.deadLetters = try delete("""
                DELETE FROM dead_letters WHERE activity_id IN (SELECT value FROM json_each(?1))
                    OR EXISTS (SELECT 1 FROM json_each(?2) n WHERE instr(body, CAST(n.value AS BLOB)) > 0)
                    OR (substr(activity_id, 1, length(?3)) = ?3
                        AND EXISTS (SELECT 1 FROM json_each(?4) n WHERE instr(body, CAST(n.value AS BLOB)) > 0))
                """, [activities, needles, inApp?.prefix, Self.json(inApp?.needles ?? [])])
            erased.traceLines = try delete(
                "DELETE FROM activity_trace WHERE activity_id IN (SELECT value FROM json_each(?))", [activities])
            erased.updateTokens = try delete("""
                DELETE FROM update_tokens
                WHERE activity_id IN (SELECT value FROM json_each(?1)) OR substr(device_id, 1, length(?2)) = ?2
                """, [activities, subscriber])
            erased.pushToStartTokens = try delete("DELETE FROM push_to_start_tokens WHERE user_id = ?", [userID])
            erased.follows = try delete("DELETE FROM follows WHERE user_id = ?", [userID])
            erased.preferences = try delete("DELETE FROM preferences WHERE user_id = ?", [userID])
            _ = try delete("DELETE FROM late_starts WHERE user_id = ?", [userID])
            _ = try delete("DELETE FROM start_topics WHERE activity_id IN (SELECT value FROM json_each(?))", [activities])
            erased.activities = try delete("DELETE FROM activities WHERE id IN (SELECT value FROM json_each(?))", [activities])
            return erased
        }
    }
}
