import Foundation
import Logging
import PostgresNIO

// Tests: Tests/LivelineStoreTests/TokenConformanceTests.swift, Tests/LivelineStoreTests/ConcurrencyConformanceTests.swift

extension PostgresLivelineStore {
    public func registerUpdateToken(_ registration: UpdateTokenRegistration) async throws -> TokenRegistrationOutcome {
        let logger = self.logger
        return try await transaction { connection in
            let id = registration.activityID
            let domain = registration.domain ?? ""
            let type = registration.attributesType ?? ""
            let user = registration.userID
            // DO NOTHING on conflict: the first registration (or event) settles the owner.
            let createdActivity = try await Self.first(String.self, """
                INSERT INTO activities (id, domain, attributes_type, user_id) VALUES (\(id), \(domain), \(type), \(user))
                ON CONFLICT (id) DO NOTHING RETURNING id
                """, on: connection, logger: logger) != nil
            // Locks the activity before its tokens, the order applyChanges uses too.
            var owner: String?
            var ended = false
            for try await (rowOwner, rowEnded) in try await connection.query(
                "SELECT user_id, ended_ms IS NOT NULL FROM activities WHERE id = \(id) FOR UPDATE", logger: logger
            ).decode((String, Bool).self) {
                owner = rowOwner
                ended = rowEnded
            }
            guard owner == user else { return .ownedByAnotherUser }
            guard !ended else { return .activityEnded }
            let device = registration.deviceID
            let token = registration.token
            let ms = registration.at.millisecondsSince1970
            let environment = registration.environment.rawValue
            let locale = registration.locale
            let version = registration.contentVersion
            let inserted = try await Self.first(Bool.self, """
                INSERT INTO update_tokens (activity_id, device_id, token, registered_ms, environment, locale, content_version)
                VALUES (\(id), \(device), \(token), \(ms), \(environment), \(locale), \(version))
                ON CONFLICT (activity_id, device_id) DO UPDATE SET token = EXCLUDED.token,
                    registered_ms = EXCLUDED.registered_ms, environment = EXCLUDED.environment, locale = EXCLUDED.locale,
                    content_version = EXCLUDED.content_version
                RETURNING (xmax = 0)
                """, on: connection, logger: logger) ?? false
            return inserted ? .created(createdActivity: createdActivity) : .replaced
        }
    }

    public func removeUpdateToken(activityID: String, deviceID: String, userID: String) async throws -> TokenRemovalOutcome {
        let logger = self.logger
        return try await transaction { connection in
            guard let owner = try await Self.first(
                String.self, "SELECT user_id FROM activities WHERE id = \(activityID) FOR UPDATE", on: connection, logger: logger)
            else { return .notFound }
            guard owner == userID else { return .ownedByAnotherUser }
            let removed = try await Self.first(String.self, """
                DELETE FROM update_tokens WHERE activity_id = \(activityID) AND device_id = \(deviceID) RETURNING device_id
                """, on: connection, logger: logger)
            return removed == nil ? .notFound : .removed
        }
    }

    public func registerPushToStartToken(_ token: PushToStartToken) async throws {
        let registered = token.registeredAt.millisecondsSince1970
        let environment = token.environment.rawValue
        // xmax is 0 on a row the statement inserted, not on one it updated.
        guard try await first(Bool.self, """
            INSERT INTO push_to_start_tokens
                (user_id, attributes_type, device_id, token, registered_ms, environment, os_version, locale, content_version)
            VALUES (\(token.userID), \(token.attributesType), \(token.deviceID), \(token.token), \(registered),
                    \(environment), \(token.osVersion), \(token.locale), \(token.contentVersion))
            ON CONFLICT (user_id, attributes_type, device_id) DO UPDATE SET token = EXCLUDED.token,
                registered_ms = EXCLUDED.registered_ms, environment = EXCLUDED.environment,
                os_version = EXCLUDED.os_version, locale = EXCLUDED.locale, content_version = EXCLUDED.content_version
            RETURNING xmax = 0
            """) == true else { return }
        // A device new to the user was in no live game's audience: queue it for those the user follows.
        try await query("""
            INSERT INTO late_starts (activity_id, user_id, device_id, queued_ms)
            SELECT DISTINCT st.activity_id, \(token.userID), \(token.deviceID), \(registered)
            FROM follows f
            JOIN start_topics st ON st.topic = f.topic
            JOIN activities a ON a.id = st.activity_id
            WHERE f.user_id = \(token.userID) AND a.attributes_type = \(token.attributesType) AND a.ended_ms IS NULL
            ON CONFLICT DO NOTHING
            """)
    }

    public func pushToStartDevices(userID: String) async throws -> Set<String> {
        Set(try await query("SELECT DISTINCT device_id FROM push_to_start_tokens WHERE user_id = \(userID)").decode(String.self))
    }

    public func oldestContentVersion(attributesType: String) async throws -> Int? {
        try await first(Int?.self, """
            SELECT min(content_version) FROM push_to_start_tokens
            WHERE attributes_type = \(attributesType) AND content_version IS NOT NULL
            """) ?? nil
    }

    public func tokenRegistrations(attributesType: String?) async throws -> [TokenRegistrations] {
        var counts: [TokenRegistrations] = []
        for (type, kind, version, locale, devices) in try await query("""
            SELECT type, kind, content_version, locale, count(*) FROM (
                SELECT a.attributes_type AS type, 'update' AS kind, t.content_version, t.locale
                FROM update_tokens t JOIN activities a ON a.id = t.activity_id
                UNION ALL
                SELECT attributes_type, 'pushToStart', content_version, locale FROM push_to_start_tokens) r
            WHERE \(attributesType)::text IS NULL OR type = \(attributesType)::text
            GROUP BY type, kind, content_version, locale
            ORDER BY type, kind, content_version NULLS FIRST, locale NULLS FIRST
            """).decode((String, String, Int?, String?, Int64).self) {
            counts.append(TokenRegistrations(
                attributesType: type, kind: TokenRegistrations.Kind(rawValue: kind) ?? .update, contentVersion: version,
                locale: locale, devices: Int(devices)))
        }
        return counts
    }

    public func removePushToStartTokens(userID: String, attributesType: String, deviceID: String?) async throws -> Int {
        try await first(Int64.self, """
            WITH d AS (DELETE FROM push_to_start_tokens
                       WHERE user_id = \(userID) AND attributes_type = \(attributesType)
                         AND (\(deviceID)::text IS NULL OR device_id = \(deviceID)::text) RETURNING 1)
            SELECT count(*) FROM d
            """).map(Int.init) ?? 0
    }

    public func follow(userID: String, topic: String, at: Date) async throws -> Bool {
        let ms = at.millisecondsSince1970
        guard try await first(String.self, """
            INSERT INTO follows (user_id, topic, followed_ms) VALUES (\(userID), \(topic), \(ms))
            ON CONFLICT DO NOTHING RETURNING topic
            """) != nil else { return false }
        // Each live game whose start named the topic, unless the user was in its audience
        // through another of its topics followed before the audience was read.
        try await query("""
            INSERT INTO late_starts (activity_id, user_id, device_id, queued_ms)
            SELECT st.activity_id, \(userID), p.device_id, \(ms)
            FROM start_topics st
            JOIN activities a ON a.id = st.activity_id
            JOIN push_to_start_tokens p ON p.user_id = \(userID) AND p.attributes_type = a.attributes_type
            WHERE st.topic = \(topic) AND a.ended_ms IS NULL
              AND NOT EXISTS (
                  SELECT 1 FROM follows f JOIN start_topics s2 ON s2.activity_id = st.activity_id AND s2.topic = f.topic
                  WHERE f.user_id = \(userID) AND f.followed_ms < s2.audience_read_ms)
            ON CONFLICT DO NOTHING
            """)
        return true
    }

    public func unfollow(userID: String, topic: String) async throws -> Bool {
        try await first(String.self, "DELETE FROM follows WHERE user_id = \(userID) AND topic = \(topic) RETURNING topic") != nil
    }

    public func follows(userID: String) async throws -> [Follow] {
        var follows: [Follow] = []
        for (topic, ms) in try await query(
            "SELECT topic, followed_ms FROM follows WHERE user_id = \(userID) ORDER BY topic"
        ).decode((String, Int64).self) {
            follows.append(Follow(topic: topic, followedAt: Date(millisecondsSince1970: ms)))
        }
        return follows
    }

    public func deleteToken(_ token: String, registeredBefore: Date) async throws -> Int {
        let ms = registeredBefore.millisecondsSince1970
        return try await first(Int64.self, """
            WITH u AS (DELETE FROM update_tokens WHERE token = \(token) AND registered_ms < \(ms) RETURNING 1),
                 p AS (DELETE FROM push_to_start_tokens WHERE token = \(token) AND registered_ms < \(ms) RETURNING 1)
            SELECT (SELECT count(*) FROM u) + (SELECT count(*) FROM p)
            """).map(Int.init) ?? 0
    }

    public func deleteToken(_ token: String) async throws -> Int {
        try await first(Int64.self, """
            WITH u AS (DELETE FROM update_tokens WHERE token = \(token) RETURNING 1),
                 p AS (DELETE FROM push_to_start_tokens WHERE token = \(token) RETURNING 1)
            SELECT (SELECT count(*) FROM u) + (SELECT count(*) FROM p)
            """).map(Int.init) ?? 0
    }
}
