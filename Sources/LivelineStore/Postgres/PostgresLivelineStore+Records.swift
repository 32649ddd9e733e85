import Foundation
import LivelineCore
import Logging
import PostgresNIO

// Tests: Tests/LivelineStoreTests/ChannelAndTraceConformanceTests.swift, Tests/LivelineStoreTests/RetentionConformanceTests.swift, Tests/LivelineStoreTests/TokenConformanceTests.swift

extension PostgresLivelineStore {
    // MARK: Channels

    public func recordCreatedChannel(_ channelID: String, at: Date) async throws {
        let ms = at.millisecondsSince1970
        try await query("INSERT INTO created_channels (channel_id, created_ms) VALUES (\(channelID), \(ms)) ON CONFLICT DO NOTHING")
    }

    public func createdChannelIDs() async throws -> Set<String> {
        Set(try await query("SELECT channel_id FROM created_channels").decode(String.self))
    }

    public func forgetCreatedChannels(_ channelIDs: [String]) async throws {
        guard !channelIDs.isEmpty else { return }
        try await query("DELETE FROM created_channels WHERE channel_id = ANY(\(channelIDs)::text[])")
    }

    public func createChannel(_ channel: BroadcastChannel) async throws -> ChannelCreation {
        let created = channel.createdAt.millisecondsSince1970
        // Replaces only a deleted row, so a live channel stored by another worker wins.
        let inserted = try await first(String.self, """
            INSERT INTO channels AS c (domain, key, channel_id, created_ms, deleted_ms)
            VALUES (\(channel.domain), \(channel.key), \(channel.channelID), \(created), NULL)
            ON CONFLICT (domain, key) DO UPDATE SET channel_id = EXCLUDED.channel_id,
                created_ms = EXCLUDED.created_ms, deleted_ms = NULL
            WHERE c.deleted_ms IS NOT NULL
            RETURNING channel_id
            """) != nil
        guard let stored = try await self.channel(domain: channel.domain, key: channel.key) else {
            throw StoreError.backend("channel vanished after it was stored")
        }
        return inserted ? .created(stored) : .existing(stored)
    }

    public func channel(domain: String, key: String) async throws -> BroadcastChannel? {
        for (channelID, created, deleted) in try await query(
            "SELECT channel_id, created_ms, deleted_ms FROM channels WHERE domain = \(domain) AND key = \(key)"
        ).decode((String, Int64, Int64?).self) {
            return BroadcastChannel(
                domain: domain, key: key, channelID: channelID, createdAt: Date(millisecondsSince1970: created),
                deletedAt: Date(millisecondsSince1970: deleted))
        }
        return nil
    }

    public func liveChannelIDs() async throws -> Set<String> {
        var ids: Set<String> = []
        for id in try await query(
            "SELECT channel_id FROM channels WHERE deleted_ms IS NULL"
        ).decode(String.self) {
            ids.insert(id)
        }
        return ids
    }

    public func channelsToSweep(endedBefore: Date, startedBefore: Date, idleBefore: Date, limit: Int) async throws -> [BroadcastChannel] {
        let ended = endedBefore.millisecondsSince1970
        let started = startedBefore.millisecondsSince1970
        let idle = idleBefore.millisecondsSince1970
        var channels: [BroadcastChannel] = []
        for (domain, key, channelID, created) in try await query("""
            SELECT c.domain, c.key, c.channel_id, c.created_ms
            FROM channels c LEFT JOIN activities a ON a.id = c.key AND a.domain = c.domain
            WHERE c.deleted_ms IS NULL
              AND (a.ended_ms < \(ended) OR a.started_ms < \(started)
                   OR (a.id IS NULL AND c.created_ms < \(started))
                   OR (a.started_ms IS NULL AND a.ended_ms IS NULL AND COALESCE(a.last_event_ms, c.created_ms) < \(idle)))
            ORDER BY c.created_ms LIMIT \(Int64(limit))
            """).decode((String, String, String, Int64).self) {
            channels.append(BroadcastChannel(
                domain: domain, key: key, channelID: channelID, createdAt: Date(millisecondsSince1970: created)))
        }
        return channels
    }

    public func markChannelDeleted(domain: String, key: String, at: Date) async throws -> Bool {
        let ms = at.millisecondsSince1970
        return try await first(String.self, """
            WITH deleted AS (
                UPDATE channels SET deleted_ms = \(ms) WHERE domain = \(domain) AND key = \(key) AND deleted_ms IS NULL
                RETURNING channel_id),
            forgotten AS (DELETE FROM created_channels WHERE channel_id IN (SELECT channel_id FROM deleted))
            SELECT channel_id FROM deleted
            """) != nil
    }

    // MARK: Trace

    public func appendTrace(_ entries: [TraceEntry]) async throws {
        guard !entries.isEmpty else { return }
        let logger = self.logger
        try await transaction { connection in
            try await Self.insertTrace(entries, on: connection, logger: logger)
        }
    }

    public func trace(activityID: String, limit: Int) async throws -> [TraceEntry] {
        let limit = Int64(max(0, limit))
        var entries: [TraceEntry] = []
        for (at, kind, detail) in try await query("""
            SELECT at_ms, kind, detail FROM (
                SELECT * FROM activity_trace WHERE activity_id = \(activityID) ORDER BY at_ms DESC, seq DESC LIMIT \(limit)
            ) newest ORDER BY at_ms, seq
            """).decode((Int64, String, String).self)
        {
            entries.append(TraceEntry(
                activityID: activityID, at: Date(millisecondsSince1970: at),
                kind: TraceEntry.Kind(stored: kind), detail: detail))
        }
        return entries
    }

    public func prune(_ cutoffs: RetentionCutoffs, limit: Int) async throws -> PruneCounts {
        let limit = Int64(limit)
        var counts = PruneCounts()
        // SKIP LOCKED: a row a translator, sender or api request holds is left for the next
        // prune rather than waited on.
        counts.traceLines = try await pruneLog("activity_trace", before: cutoffs.traceBefore, limit: limit)
        let activities = cutoffs.activitiesBefore.millisecondsSince1970
        // Ended ones through their index; then, only if those were fewer than the limit, the
        // ones that stopped without an end (rare: a producer that never sent one), by a scan.
        counts += try await pruneActivities(
            "SELECT id FROM activities WHERE ended_ms < \(activities) LIMIT \(limit) FOR UPDATE SKIP LOCKED")
        if Int64(counts.activities) < limit {
            counts += try await pruneActivities("""
                SELECT id FROM activities WHERE ended_ms IS NULL AND COALESCE(started_ms, last_event_ms) < \(activities)
                LIMIT \(limit - Int64(counts.activities)) FOR UPDATE SKIP LOCKED
                """)
        }
        let tokens = cutoffs.pushToStartTokensBefore.millisecondsSince1970
        counts.pushToStartTokens = try await count("""
            WITH d AS (DELETE FROM push_to_start_tokens WHERE (user_id, attributes_type, device_id) IN (
                SELECT user_id, attributes_type, device_id FROM push_to_start_tokens WHERE registered_ms < \(tokens)
                LIMIT \(limit) FOR UPDATE SKIP LOCKED) RETURNING 1)
            SELECT count(*) FROM d
            """)
        let letters = cutoffs.deadLettersBefore.millisecondsSince1970
        counts.deadLetters = try await count("""
            WITH d AS (DELETE FROM dead_letters WHERE id IN (
                SELECT id FROM dead_letters WHERE last_failed_ms < \(letters) LIMIT \(limit) FOR UPDATE SKIP LOCKED) RETURNING 1)
            SELECT count(*) FROM d
            """)
        let follows = cutoffs.followsBefore.millisecondsSince1970
        counts.follows = try await count("""
            WITH d AS (DELETE FROM follows WHERE (user_id, topic) IN (
                SELECT f.user_id, f.topic FROM follows f
                WHERE f.followed_ms < \(follows)
                  AND NOT EXISTS (SELECT 1 FROM push_to_start_tokens p WHERE p.user_id = f.user_id)
                LIMIT \(limit) FOR UPDATE OF f SKIP LOCKED) RETURNING 1)
            SELECT count(*) FROM d
            """)
        counts.auditEntries = try await pruneLog("audit", before: cutoffs.auditBefore, limit: limit)
        let claims = cutoffs.eventClaimsBefore.millisecondsSince1970
        counts.eventClaims = try await count("""
            WITH d AS (DELETE FROM event_claims WHERE event_id IN (
                SELECT event_id FROM event_claims WHERE received_ms < \(claims) LIMIT \(limit) FOR UPDATE SKIP LOCKED) RETURNING 1)
            SELECT count(*) FROM d
            """)
        // Outcomes are kept as long as event ids: a producer asks about an event it sent lately.
        counts.eventOutcomes = try await count("""
            WITH d AS (DELETE FROM event_outcomes WHERE outcome_id IN (
                SELECT outcome_id FROM event_outcomes WHERE at_ms < \(claims) LIMIT \(limit) FOR UPDATE SKIP LOCKED) RETURNING 1)
            SELECT count(*) FROM d
            """)
        return counts
    }

    /// Deletes up to `limit` rows written before `cutoff` from an append-only log (`seq`, `at_ms`).
    private func pruneLog(_ table: String, before cutoff: Date, limit: Int64) async throws -> Int {
        let ms = cutoff.millisecondsSince1970
        return try await count("""
            WITH d AS (DELETE FROM \(unescaped: table) WHERE seq IN (
                SELECT seq FROM \(unescaped: table) WHERE at_ms < \(ms) LIMIT \(limit) FOR UPDATE SKIP LOCKED) RETURNING 1)
            SELECT count(*) FROM d
            """)
    }

    /// Deletes the activities `picked` selects, with their update tokens, late starts, start
    /// topics and the records of their deleted channels.
    private func pruneActivities(_ picked: String) async throws -> PruneCounts {
        var counts = PruneCounts()
        for (gone, tokens, channels) in try await query("""
            WITH picked AS (\(unescaped: picked)),
            tokens AS (DELETE FROM update_tokens WHERE activity_id IN (SELECT id FROM picked) RETURNING 1),
            channels AS (DELETE FROM channels WHERE key IN (SELECT id FROM picked) AND deleted_ms IS NOT NULL RETURNING 1),
            late AS (DELETE FROM late_starts WHERE activity_id IN (SELECT id FROM picked)),
            topics AS (DELETE FROM start_topics WHERE activity_id IN (SELECT id FROM picked)),
            gone AS (DELETE FROM activities WHERE id IN (SELECT id FROM picked) RETURNING 1)
            SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM tokens), (SELECT count(*) FROM channels)
            """).decode((Int64, Int64, Int64).self) {
            counts.activities = Int(gone)
            counts.updateTokens = Int(tokens)
            counts.channels = Int(channels)
        }
        return counts
    }

    private func count(_ query: PostgresQuery) async throws -> Int {
        try await first(Int64.self, query).map(Int.init) ?? 0
    }

    // MARK: Preferences and reconciliation

    public func preferences(userID: String) async throws -> UserPreferences {
        for (enabled, frequent) in try await query(
            "SELECT activities_enabled, frequent_pushes_enabled FROM preferences WHERE user_id = \(userID)"
        ).decode((Bool, Bool).self) {
            return UserPreferences(activitiesEnabled: enabled, frequentPushesEnabled: frequent)
        }
        return .defaults
    }

    public func setPreferences(_ preferences: UserPreferences, userID: String) async throws {
        try await query("""
            INSERT INTO preferences (user_id, activities_enabled, frequent_pushes_enabled)
            VALUES (\(userID), \(preferences.activitiesEnabled), \(preferences.frequentPushesEnabled))
            ON CONFLICT (user_id) DO UPDATE SET activities_enabled = EXCLUDED.activities_enabled,
                frequent_pushes_enabled = EXCLUDED.frequent_pushes_enabled
            """)
    }

    public func activity(id: String) async throws -> ActivityRecord? {
        for (domain, type, owner, attributes, contentState, lastEvent, started, ended, endReason, spent, window,
                       lastEventID, lastStatus, lastPush, startSent)
            in try await query("""
                SELECT domain, attributes_type, user_id, attributes, content_state, last_event_ms, started_ms, ended_ms,
                       end_reason, budget_spent, budget_window_ms, last_event_id, last_status, last_push_s,
                       push_to_start_sent_ms
                FROM activities WHERE id = \(id)
                """).decode(
                    (String, String, String, String?, String?, Int64?, Int64?, Int64?, String?, Int64, Int64?,
                     String?, String?, Int64?, Int64?).self)
        {
            return ActivityRecord(
                id: id, domain: domain, attributesType: type, userID: owner, attributes: attributes,
                contentState: contentState, lastEventAt: Date(millisecondsSince1970: lastEvent),
                startedAt: Date(millisecondsSince1970: started), endedAt: Date(millisecondsSince1970: ended),
                endReason: endReason,
                budget: PriorityBudget(spent: Int(spent), windowStart: Date(millisecondsSince1970: window)),
                lastEventID: lastEventID, lastStatus: lastStatus, lastPushTimestamp: lastPush,
                pushToStartSentAt: Date(millisecondsSince1970: startSent))
        }
        return nil
    }
}
