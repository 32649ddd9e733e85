import Foundation
import LivelineModels
import Logging
import PostgresNIO

// Tests: Tests/LivelineStoreTests/ChangeConformanceTests.swift, Tests/LivelineStoreTests/LateStartConformanceTests.swift, Tests/LivelineStoreTests/TokenConformanceTests.swift

extension PostgresLivelineStore {
    public func applyChanges(_ changes: [ActivityChange], trace: [TraceEntry]) async throws -> [ChangeOutcome] {
        guard !changes.isEmpty || !trace.isEmpty else { return [] }
        let rounds = Self.rounds(of: changes)
        let logger = self.logger
        return try await transaction { connection in
            var outcomes = [ChangeOutcome](repeating: .stale, count: changes.count)
            if !changes.isEmpty {
                // Lock the existing rows in id order first, so that concurrent batches and
                // registrations (which lock the activity before its tokens) queue rather than deadlock.
                let allIDs = Array(Set(changes.map(\.activityID))).sorted()
                let pairs = rounds.first ?? []
                try await connection.query("""
                    SELECT count(*) FROM (SELECT id FROM activities WHERE id = ANY(\(allIDs)::text[]) ORDER BY id FOR UPDATE) locked
                    """, logger: logger)
                // A pending row made by another user's registration: the event's user owns the
                // activity, so that user's tokens must never receive its pushes.
                let purgeIDs = pairs.map { changes[$0].activityID }
                let purgeUsers = pairs.map { changes[$0].userID }
                try await connection.query("""
                    DELETE FROM update_tokens t USING activities a, unnest(\(purgeIDs)::text[], \(purgeUsers)::text[]) AS i(id, user_id)
                    WHERE a.id = i.id AND t.activity_id = a.id AND a.last_event_ms IS NULL AND a.user_id <> i.user_id
                    """, logger: logger)
            }
            for round in rounds {
                let applied = try await Self.upsert(round.map { changes[$0] }, on: connection, logger: logger)
                let missed = round.filter { !applied.contains(changes[$0].activityID) }
                var stored: [String: StoredEvent] = [:]
                if !missed.isEmpty {
                    let ids = missed.map { changes[$0].activityID }
                    for try await (id, ended, eventID) in try await connection.query(
                        "SELECT id, ended_ms IS NOT NULL, last_event_id FROM activities WHERE id = ANY(\(ids)::text[])", logger: logger
                    ).decode((String, Bool, String?).self) {
                        stored[id] = StoredEvent(ended: ended, eventID: eventID)
                    }
                }
                for index in round {
                    let change = changes[index]
                    outcomes[index] = applied.contains(change.activityID)
                        ? .applied : (stored[change.activityID] ?? StoredEvent(ended: false, eventID: nil)).outcome(missing: change)
                }
            }
            try await Self.recordStarts(of: changes, outcomes: outcomes, on: connection, logger: logger)
            try await Self.insertTrace(trace, on: connection, logger: logger)
            return outcomes
        }
    }

    /// The topics of each applied shared start, so followers who come after it are started late.
    private static func recordStarts(
        of changes: [ActivityChange], outcomes: [ChangeOutcome], on connection: PostgresConnection, logger: Logger
    ) async throws {
        var topics: [String] = [], ids: [String] = [], readAt: [Int64] = []
        for (change, outcome) in zip(changes, outcomes) where outcome == .applied {
            guard let start = change.sharedStart else { continue }
            for topic in start.topics {
                topics.append(topic)
                ids.append(change.activityID)
                readAt.append(start.audienceReadAt.millisecondsSince1970)
            }
        }
        guard !topics.isEmpty else { return }
        try await connection.query("""
            INSERT INTO start_topics (topic, activity_id, audience_read_ms)
            SELECT * FROM unnest(\(topics)::text[], \(ids)::text[], \(readAt)::int8[])
            ON CONFLICT DO NOTHING
            """, logger: logger)
    }

    public func claimLateStarts(now: Date, startedAfter: Date, limit: Int) async throws -> [LateStart] {
        let nowMS = now.millisecondsSince1970
        let cutoff = startedAfter.millisecondsSince1970
        let limit = Int64(limit)
        try await query("""
            DELETE FROM late_starts l USING activities a
            WHERE a.id = l.activity_id AND (a.ended_ms IS NOT NULL OR a.started_ms <= \(cutoff))
            """)
        try await query("""
            DELETE FROM start_topics s USING activities a
            WHERE a.id = s.activity_id AND (a.ended_ms IS NOT NULL OR a.started_ms <= \(cutoff))
            """)
        // SKIP LOCKED: translators claiming at once take different rows rather than wait.
        var starts: [LateStart] = []
        for (activityID, userID, deviceID, type, token, registered, environment, osVersion, locale, version) in try await query("""
            WITH picked AS (
                SELECT activity_id, user_id, device_id FROM late_starts
                WHERE claimed_ms IS NULL ORDER BY queued_ms, activity_id, user_id, device_id LIMIT \(limit) FOR UPDATE SKIP LOCKED),
            claimed AS (
                UPDATE late_starts l SET claimed_ms = \(nowMS) FROM picked
                WHERE l.activity_id = picked.activity_id AND l.user_id = picked.user_id AND l.device_id = picked.device_id
                RETURNING l.activity_id, l.user_id, l.device_id, l.queued_ms)
            SELECT c.activity_id, c.user_id, c.device_id, p.attributes_type, p.token, p.registered_ms, p.environment, p.os_version,
                   p.locale, p.content_version
            FROM claimed c
            JOIN activities a ON a.id = c.activity_id
            JOIN push_to_start_tokens p
                ON p.user_id = c.user_id AND p.attributes_type = a.attributes_type AND p.device_id = c.device_id
            WHERE NOT EXISTS (SELECT 1 FROM preferences pr WHERE pr.user_id = c.user_id AND NOT pr.activities_enabled)
            ORDER BY c.queued_ms, c.activity_id, c.user_id, c.device_id
            """).decode((String, String, String, String, String, Int64, String, String?, String?, Int?).self) {
            starts.append(LateStart(activityID: activityID, token: PushToStartToken(
                userID: userID, attributesType: type, deviceID: deviceID, token: token,
                registeredAt: Date(millisecondsSince1970: registered), environment: APNsEnvironment(stored: environment),
                osVersion: osVersion, locale: locale, contentVersion: version)))
        }
        return starts
    }

    public func releaseLateStarts(_ starts: [LateStart]) async throws {
        guard !starts.isEmpty else { return }
        let ids = starts.map(\.activityID), users = starts.map(\.token.userID), devices = starts.map(\.token.deviceID)
        try await query("""
            UPDATE late_starts l SET claimed_ms = NULL
            FROM unnest(\(ids)::text[], \(users)::text[], \(devices)::text[]) AS i(activity_id, user_id, device_id)
            WHERE l.activity_id = i.activity_id AND l.user_id = i.user_id AND l.device_id = i.device_id
            """)
    }

    /// Splits changes into rounds holding at most one change per activity, in batch order: one
    /// multi-row upsert cannot touch a row twice, and the k-th change of an activity must see
    /// the (k-1)-th. Each round is sorted by id so row locks are taken in one order.
    static func rounds(of changes: [ActivityChange]) -> [[Int]] {
        var rounds: [[Int]] = []
        var seen: [String: Int] = [:]
        for (index, change) in changes.enumerated() {
            let round = seen[change.activityID, default: 0]
            seen[change.activityID] = round + 1
            if round == rounds.count { rounds.append([]) }
            rounds[round].append(index)
        }
        return rounds.map { round in round.sorted { changes[$0].activityID < changes[$1].activityID } }
    }

    /// One conditional multi-row upsert; returns the ids it applied.
    static func upsert(_ changes: [ActivityChange], on connection: PostgresConnection, logger: Logger) async throws -> Set<String> {
        let ids = changes.map(\.activityID)
        let domains = changes.map(\.domain)
        let types = changes.map(\.attributesType)
        let users = changes.map(\.userID)
        // Arrays cannot carry NULL through postgres-nio's encoders: '' and -1 stand for none.
        let attributes = changes.map { $0.attributes ?? "" }
        let states = changes.map(\.contentState)
        let times = changes.map { $0.eventTime.millisecondsSince1970 }
        let endTimes = changes.map { $0.end?.at.millisecondsSince1970 ?? -1 }
        let endReasons = changes.map { $0.end?.reason ?? "" }
        let eventIDs = changes.map { $0.eventID ?? "" }
        let statuses = changes.map { $0.status ?? "" }
        let pushTimes = changes.map { $0.pushTimestamp ?? -1 }
        let startsSent = changes.map { $0.pushToStartSentAt?.millisecondsSince1970 ?? -1 }
        let started = changes.map { $0.startedAt?.millisecondsSince1970 ?? -1 }
        let query: PostgresQuery = """
            INSERT INTO activities AS a (id, domain, attributes_type, user_id, attributes, content_state,
                                         last_event_ms, started_ms, ended_ms, end_reason,
                                         last_event_id, last_status, last_push_s, push_to_start_sent_ms)
            SELECT id, domain, attributes_type, user_id, NULLIF(attributes, ''), content_state,
                   event_ms, NULLIF(started_ms, -1), NULLIF(ended_ms, -1), NULLIF(end_reason, ''),
                   NULLIF(event_id, ''), NULLIF(status, ''), NULLIF(push_s, -1), NULLIF(start_sent_ms, -1)
            FROM unnest(\(ids)::text[], \(domains)::text[], \(types)::text[], \(users)::text[], \(attributes)::text[],
                        \(states)::text[], \(times)::int8[], \(endTimes)::int8[], \(endReasons)::text[],
                        \(eventIDs)::text[], \(statuses)::text[], \(pushTimes)::int8[], \(startsSent)::int8[],
                        \(started)::int8[])
                 AS i(id, domain, attributes_type, user_id, attributes, content_state, event_ms, ended_ms, end_reason,
                      event_id, status, push_s, start_sent_ms, started_ms)
            ORDER BY id
            ON CONFLICT (id) DO UPDATE SET
                domain = EXCLUDED.domain,
                attributes_type = EXCLUDED.attributes_type,
                user_id = CASE WHEN a.last_event_ms IS NULL THEN EXCLUDED.user_id ELSE a.user_id END,
                attributes = COALESCE(EXCLUDED.attributes, a.attributes),
                content_state = EXCLUDED.content_state,
                last_event_ms = EXCLUDED.last_event_ms,
                started_ms = COALESCE(a.started_ms, EXCLUDED.started_ms),
                ended_ms = EXCLUDED.ended_ms,
                end_reason = EXCLUDED.end_reason,
                last_event_id = EXCLUDED.last_event_id,
                last_status = EXCLUDED.last_status,
                last_push_s = COALESCE(EXCLUDED.last_push_s, a.last_push_s),
                push_to_start_sent_ms = COALESCE(a.push_to_start_sent_ms, EXCLUDED.push_to_start_sent_ms)
            WHERE a.ended_ms IS NULL AND (a.last_event_ms IS NULL OR a.last_event_ms < EXCLUDED.last_event_ms)
            RETURNING a.id
            """
        var applied = Set<String>()
        for try await id in try await connection.query(query, logger: logger).decode(String.self) {
            applied.insert(id)
        }
        return applied
    }

    public func spendPriorityBudget(_ activityIDs: [String], at now: Date, window: TimeInterval) async throws -> [String: Int] {
        guard !activityIDs.isEmpty else { return [:] }
        var amounts: [String: Int64] = [:]
        for id in activityIDs { amounts[id, default: 0] += 1 }
        let ids = amounts.keys.sorted()
        let counts = ids.map { amounts[$0] ?? 0 }
        let nowMS = now.millisecondsSince1970
        let windowStartLimit = nowMS - Int64((window * 1000).rounded())
        let query: PostgresQuery = """
            UPDATE activities a SET
                budget_spent = CASE WHEN a.budget_window_ms IS NULL OR a.budget_window_ms <= \(windowStartLimit)
                                    THEN i.amount ELSE a.budget_spent + i.amount END,
                budget_window_ms = CASE WHEN a.budget_window_ms IS NULL OR a.budget_window_ms <= \(windowStartLimit)
                                        THEN \(nowMS) ELSE a.budget_window_ms END
            FROM unnest(\(ids)::text[], \(counts)::int8[]) AS i(id, amount)
            WHERE a.id = i.id
            RETURNING a.id, a.budget_spent
            """
        var spent: [String: Int] = [:]
        for (id, count) in try await self.query(query).decode((String, Int64).self) {
            spent[id] = Int(count)
        }
        return spent
    }

    public func audience(
        topics: [String], attributesType: String, of activityID: String?, after: AudiencePosition?, limit: Int
    ) async throws -> [PushToStartToken] {
        guard !topics.isEmpty, limit > 0 else { return [] }
        // A page walks the tokens in key order from the position (a row comparison on the key)
        // and looks each one's follows up by key: it costs its own rows, not every follower.
        let afterUser = after?.userID ?? "", afterDevice = after?.deviceID ?? ""
        var audience: [PushToStartToken] = []
        for (userID, deviceID, token, registered, environment, osVersion, locale, version) in try await query("""
            SELECT p.user_id, p.device_id, p.token, p.registered_ms, p.environment, p.os_version, p.locale, p.content_version
            FROM push_to_start_tokens p
            WHERE p.attributes_type = \(attributesType)
              AND EXISTS (SELECT 1 FROM follows f WHERE f.user_id = p.user_id AND f.topic = ANY(\(topics)::text[]))
              AND NOT EXISTS (SELECT 1 FROM preferences pr WHERE pr.user_id = p.user_id AND NOT pr.activities_enabled)
              AND NOT EXISTS (SELECT 1 FROM late_starts l
                              WHERE l.activity_id = \(activityID) AND l.user_id = p.user_id AND l.device_id = p.device_id)
              AND (p.user_id, p.attributes_type, p.device_id) > (\(afterUser), \(attributesType), \(afterDevice))
            ORDER BY p.user_id, p.attributes_type, p.device_id
            LIMIT \(limit)
            """).decode((String, String, String, Int64, String, String?, String?, Int?).self) {
            audience.append(PushToStartToken(
                userID: userID, attributesType: attributesType, deviceID: deviceID, token: token,
                registeredAt: Date(millisecondsSince1970: registered), environment: APNsEnvironment(stored: environment),
                osVersion: osVersion, locale: locale, contentVersion: version))
        }
        return audience
    }

    static func insertTrace(_ entries: [TraceEntry], on connection: PostgresConnection, logger: Logger) async throws {
        guard !entries.isEmpty else { return }
        let ids = entries.map(\.activityID)
        let times = entries.map { $0.at.millisecondsSince1970 }
        let kinds = entries.map(\.kind.rawValue)
        let details = entries.map(\.detail)
        try await connection.query("""
            INSERT INTO activity_trace (activity_id, at_ms, kind, detail)
            SELECT * FROM unnest(\(ids)::text[], \(times)::int8[], \(kinds)::text[], \(details)::text[])
            """, logger: logger)
    }
}
