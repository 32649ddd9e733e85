import Foundation
import GRDB

// Tests: Tests/LivelineStoreTests/TokenConformanceTests.swift, Tests/LivelineStoreTests/ConcurrencyConformanceTests.swift

extension SQLiteLivelineStore {
    public func registerUpdateToken(_ registration: UpdateTokenRegistration) async throws -> TokenRegistrationOutcome {
        try await write { db in
            var createdActivity = false
            if let owner = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT user_id, ended_ms IS NOT NULL AS ended FROM activities WHERE id = ?"),
                arguments: [registration.activityID])
            {
                if (owner[0] as String) != registration.userID { return .ownedByAnotherUser }
                if owner[1] as Bool { return .activityEnded }
            } else {
                try db.cachedStatement(
                    sql: "INSERT INTO activities (id, domain, attributes_type, user_id) VALUES (?, ?, ?, ?)"
                ).execute(arguments: [
                        registration.activityID, registration.domain ?? "", registration.attributesType ?? "",
                        registration.userID,
                    ])
                createdActivity = true
            }
            let existed = try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT 1 FROM update_tokens WHERE activity_id = ? AND device_id = ?"),
                arguments: [registration.activityID, registration.deviceID]) ?? false
            try db.cachedStatement(sql: """
                INSERT INTO update_tokens (activity_id, device_id, token, registered_ms, environment, locale, content_version)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (activity_id, device_id) DO UPDATE SET token = excluded.token,
                    registered_ms = excluded.registered_ms, environment = excluded.environment, locale = excluded.locale,
                    content_version = excluded.content_version
                """).execute(arguments: [
                    registration.activityID, registration.deviceID, registration.token,
                    registration.at.millisecondsSince1970, registration.environment.rawValue, registration.locale, registration.contentVersion,
                ])
            return existed ? .replaced : .created(createdActivity: createdActivity)
        }
    }

    public func removeUpdateToken(activityID: String, deviceID: String, userID: String) async throws -> TokenRemovalOutcome {
        try await write { db in
            guard let owner = try String.fetchOne(
                db.cachedStatement(sql: "SELECT user_id FROM activities WHERE id = ?"), arguments: [activityID])
            else { return .notFound }
            guard owner == userID else { return .ownedByAnotherUser }
            try db.execute(
                sql: "DELETE FROM update_tokens WHERE activity_id = ? AND device_id = ?", arguments: [activityID, deviceID])
            return db.changesCount > 0 ? .removed : .notFound
        }
    }

    public func registerPushToStartToken(_ token: PushToStartToken) async throws {
        try await write { db in
            let isNewDevice = try Bool.fetchOne(db.cachedStatement(sql: """
                SELECT NOT EXISTS (SELECT 1 FROM push_to_start_tokens WHERE user_id = ? AND attributes_type = ? AND device_id = ?)
                """), arguments: [token.userID, token.attributesType, token.deviceID]) ?? false
            try db.cachedStatement(sql: """
                INSERT INTO push_to_start_tokens
                    (user_id, attributes_type, device_id, token, registered_ms, environment, os_version, locale, content_version)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (user_id, attributes_type, device_id) DO UPDATE SET token = excluded.token,
                    registered_ms = excluded.registered_ms, environment = excluded.environment,
                    os_version = excluded.os_version, locale = excluded.locale, content_version = excluded.content_version
                """).execute(arguments: [
                    token.userID, token.attributesType, token.deviceID, token.token, token.registeredAt.millisecondsSince1970,
                    token.environment.rawValue, token.osVersion, token.locale, token.contentVersion,
                ])
            guard isNewDevice else { return }
            // A device new to the user was in no live game's audience: queue it for those the
            // user follows.
            try db.cachedStatement(sql: """
                INSERT INTO late_starts (activity_id, user_id, device_id, queued_ms)
                SELECT DISTINCT st.activity_id, ?1, ?3, ?4
                FROM follows f
                JOIN start_topics st ON st.topic = f.topic
                JOIN activities a ON a.id = st.activity_id
                WHERE f.user_id = ?1 AND a.attributes_type = ?2 AND a.ended_ms IS NULL
                ON CONFLICT DO NOTHING
                """).execute(arguments: [
                    token.userID, token.attributesType, token.deviceID, token.registeredAt.millisecondsSince1970,
                ])
        }
    }

    public func pushToStartDevices(userID: String) async throws -> Set<String> {
        try await pool.read { db in
            Set(try String.fetchAll(db, sql: "SELECT DISTINCT device_id FROM push_to_start_tokens WHERE user_id = ?", arguments: [userID]))
        }
    }

    public func oldestContentVersion(attributesType: String) async throws -> Int? {
        try await pool.read { db in
            try Int.fetchOne(db.cachedStatement(sql: """
                SELECT min(content_version) FROM push_to_start_tokens WHERE attributes_type = ? AND content_version IS NOT NULL
                """), arguments: [attributesType])
        }
    }

    public func tokenRegistrations(attributesType: String?) async throws -> [TokenRegistrations] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT type, kind, content_version, locale, count(*) FROM (
                    SELECT a.attributes_type AS type, 'update' AS kind, t.content_version, t.locale
                    FROM update_tokens t JOIN activities a ON a.id = t.activity_id
                    UNION ALL
                    SELECT attributes_type, 'pushToStart', content_version, locale FROM push_to_start_tokens)
                WHERE ?1 IS NULL OR type = ?1
                GROUP BY type, kind, content_version, locale
                ORDER BY type, kind, content_version NULLS FIRST, locale NULLS FIRST
                """, arguments: [attributesType])
                .map { row in
                    TokenRegistrations(
                        attributesType: row[0], kind: TokenRegistrations.Kind(rawValue: row[1]) ?? .update,
                        contentVersion: row[2], locale: row[3], devices: row[4])
                }
        }
    }

    public func removePushToStartTokens(userID: String, attributesType: String, deviceID: String?) async throws -> Int {
        try await write { db in
            try db.execute(
                sql: "DELETE FROM push_to_start_tokens WHERE user_id = ? AND attributes_type = ? AND (? IS NULL OR device_id = ?)",
                arguments: [userID, attributesType, deviceID, deviceID])
            return db.changesCount
        }
    }

    public func follow(userID: String, topic: String, at: Date) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: "INSERT INTO follows (user_id, topic, followed_ms) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                arguments: [userID, topic, at.millisecondsSince1970])
            guard db.changesCount > 0 else { return false }
            // Each live game whose start named the topic, unless the user was in its audience
            // through another of its topics followed before the audience was read.
            try db.cachedStatement(sql: """
                INSERT INTO late_starts (activity_id, user_id, device_id, queued_ms)
                SELECT st.activity_id, ?1, p.device_id, ?3
                FROM start_topics st
                JOIN activities a ON a.id = st.activity_id
                JOIN push_to_start_tokens p ON p.user_id = ?1 AND p.attributes_type = a.attributes_type
                WHERE st.topic = ?2 AND a.ended_ms IS NULL
                  AND NOT EXISTS (
                      SELECT 1 FROM follows f JOIN start_topics s2 ON s2.activity_id = st.activity_id AND s2.topic = f.topic
                      WHERE f.user_id = ?1 AND f.followed_ms < s2.audience_read_ms)
                ON CONFLICT DO NOTHING
                """).execute(arguments: [userID, topic, at.millisecondsSince1970])
            return true
        }
    }

    public func unfollow(userID: String, topic: String) async throws -> Bool {
        try await write { db in
            try db.execute(sql: "DELETE FROM follows WHERE user_id = ? AND topic = ?", arguments: [userID, topic])
            return db.changesCount > 0
        }
    }

    public func follows(userID: String) async throws -> [Follow] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT topic, followed_ms FROM follows WHERE user_id = ? ORDER BY topic", arguments: [userID])
                .map { Follow(topic: $0[0], followedAt: Date(millisecondsSince1970: $0[1])) }
        }
    }

    public func deleteToken(_ token: String, registeredBefore: Date) async throws -> Int {
        let ms = registeredBefore.millisecondsSince1970
        return try await write { db in
            try db.cachedStatement(sql: "DELETE FROM update_tokens WHERE token = ? AND registered_ms < ?").execute(arguments: [token, ms])
            var deleted = db.changesCount
            try db.cachedStatement(sql: "DELETE FROM push_to_start_tokens WHERE token = ? AND registered_ms < ?").execute(arguments: [token, ms])
            deleted += db.changesCount
            return deleted
        }
    }

    public func deleteToken(_ token: String) async throws -> Int {
        try await write { db in
            try db.cachedStatement(sql: "DELETE FROM update_tokens WHERE token = ?").execute(arguments: [token])
            var deleted = db.changesCount
            try db.cachedStatement(sql: "DELETE FROM push_to_start_tokens WHERE token = ?").execute(arguments: [token])
            deleted += db.changesCount
            return deleted
        }
    }
}
