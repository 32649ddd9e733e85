import Foundation
import PostgresNIO

// Tests: Tests/LivelineStoreTests/ErasureConformanceTests.swift

extension PostgresLivelineStore {
    public func liveActivities(ofUser userID: String) async throws -> [SnapshotRequest] {
        try await query("""
            SELECT id, attributes_type FROM activities WHERE user_id = \(userID) AND ended_ms IS NULL ORDER BY id
            """).decode((String, String).self).map { SnapshotRequest(activityID: $0.0, userID: userID, attributesType: $0.1) }
    }

    public func forgetUser(_ userID: String, sharedDomains: Set<String>) async throws -> UserErasure {
        let subscriber = "\(userID)/"
        let shared = sharedDomains.sorted()
        let logger = self.logger
        return try await transaction { connection in
            var ids: [String] = []
            for try await id in try await connection.query("""
                SELECT id FROM activities WHERE user_id = \(userID) AND NOT (domain = ANY(\(shared)::text[])) ORDER BY id FOR UPDATE
                """, logger: logger).decode(String.self) {
                ids.append(id)
            }
            // The tokens, before they go: a dead letter's body may carry one.
            var needles = UserErasure.naming(userID)
            let inApp = UserErasure.namingInApp(userID)
            let (appPrefix, appNeedles) = (inApp?.prefix, inApp?.needles ?? [])
            for try await token in try await connection.query("""
                SELECT token FROM push_to_start_tokens WHERE user_id = \(userID)
                UNION SELECT token FROM update_tokens
                WHERE activity_id = ANY(\(ids)::text[]) OR starts_with(device_id, \(subscriber))
                """, logger: logger).decode(String.self) {
                needles.append(token)
            }
            func delete(_ query: PostgresQuery) async throws -> Int {
                try await Self.first(Int64.self, query, on: connection, logger: logger).map(Int.init) ?? 0
            }
            var erased = UserErasure()
            erased.deadLetters = try await delete("""
                WITH d AS (DELETE FROM dead_letters WHERE activity_id = ANY(\(ids)::text[])
                    OR EXISTS (SELECT 1 FROM unnest(\(needles)::text[]) n WHERE position(convert_to(n, 'UTF8') IN body) > 0)
                    OR (starts_with(activity_id, \(appPrefix))
                        AND EXISTS (SELECT 1 FROM unnest(\(appNeedles)::text[]) n WHERE position(convert_to(n, 'UTF8') IN body) > 0))
                    RETURNING 1)
                SELECT count(*) FROM d
                """)
            erased.traceLines = try await delete("""
                WITH d AS (DELETE FROM activity_trace WHERE activity_id = ANY(\(ids)::text[]) RETURNING 1) SELECT count(*) FROM d
                """)
            erased.updateTokens = try await delete("""
                WITH d AS (DELETE FROM update_tokens
                    WHERE activity_id = ANY(\(ids)::text[]) OR starts_with(device_id, \(subscriber)) RETURNING 1)
                SELECT count(*) FROM d
                """)
            erased.pushToStartTokens = try await delete("""
                WITH d AS (DELETE FROM push_to_start_tokens WHERE user_id = \(userID) RETURNING 1) SELECT count(*) FROM d
                """)
            erased.follows = try await delete("""
                WITH d AS (DELETE FROM follows WHERE user_id = \(userID) RETURNING 1) SELECT count(*) FROM d
                """)
            erased.preferences = try await delete("""
                WITH d AS (DELETE FROM preferences WHERE user_id = \(userID) RETURNING 1) SELECT count(*) FROM d
                """)
            _ = try await delete("""
                WITH d AS (DELETE FROM late_starts WHERE user_id = \(userID) RETURNING 1) SELECT count(*) FROM d
                """)
            _ = try await delete("""
                WITH d AS (DELETE FROM start_topics WHERE activity_id = ANY(\(ids)::text[]) RETURNING 1) SELECT count(*) FROM d
                """)
            erased.activities = try await delete("""
                WITH d AS (DELETE FROM activities WHERE id = ANY(\(ids)::text[]) RETURNING 1) SELECT count(*) FROM d
                """)
            return erased
        }
    }
}
