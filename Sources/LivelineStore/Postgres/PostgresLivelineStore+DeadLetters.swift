import Foundation
import Logging
import PostgresNIO

// Tests: Tests/LivelineStoreTests/DeadLetterConformanceTests.swift

extension PostgresLivelineStore {
    public func keepDeadLetters(_ letters: [DeadLetterRecord]) async throws -> Int {
        guard !letters.isEmpty else { return 0 }
        // One statement for the batch: columns as parallel arrays, absent text as '' (NULLIF),
        // bodies as base64 because bytea arrays have no encoder here.
        let query: PostgresQuery = """
            WITH inserted AS (
                INSERT INTO dead_letters (
                    id, reason, source, message, domain, activity_id, event_id, job_id, payload_kind, body, routing_key,
                    attempts, first_failed_ms, last_failed_ms, kept_ms, deaths
                )
                SELECT id, reason, source, message, NULLIF(domain, ''), NULLIF(activity_id, ''), NULLIF(event_id, ''),
                       NULLIF(job_id, ''), payload_kind, decode(body, 'base64'), routing_key, attempts, first_failed_ms,
                       last_failed_ms, kept_ms, deaths
                FROM unnest(
                    \(letters.map(\.id))::text[], \(letters.map(\.reason))::text[],
                    \(letters.map(\.source.rawValue))::text[], \(letters.map(\.message))::text[],
                    \(letters.map { $0.domain ?? "" })::text[], \(letters.map { $0.activityID ?? "" })::text[],
                    \(letters.map { $0.eventID ?? "" })::text[], \(letters.map { $0.jobID ?? "" })::text[],
                    \(letters.map(\.payloadKind.rawValue))::text[], \(letters.map { $0.body.base64EncodedString() })::text[],
                    \(letters.map(\.routingKey))::text[], \(letters.map { Int64($0.attempts) })::bigint[],
                    \(letters.map(\.firstFailedAt.millisecondsSince1970))::bigint[],
                    \(letters.map(\.lastFailedAt.millisecondsSince1970))::bigint[],
                    \(letters.map(\.keptAt.millisecondsSince1970))::bigint[],
                    \(letters.map { DeadLetterQuery.encodeDeaths($0.deaths) })::text[]
                ) AS l(id, reason, source, message, domain, activity_id, event_id, job_id, payload_kind, body,
                       routing_key, attempts, first_failed_ms, last_failed_ms, kept_ms, deaths)
                ON CONFLICT (id) DO NOTHING
                RETURNING 1
            ) SELECT count(*) FROM inserted
            """
        return try await first(Int64.self, query).map(Int.init) ?? 0
    }

    public func deadLetters(matching filter: DeadLetterFilter, limit: Int) async throws -> [DeadLetterRecord] {
        let (conditions, values) = DeadLetterQuery.conditions(filter)
        return try await records(Self.query(
            """
            SELECT \(DeadLetterQuery.columns) FROM dead_letters WHERE \(conditions)
            ORDER BY last_failed_ms DESC, id DESC LIMIT ?
            """, values + [.integer(Int64(max(0, limit)))]))
    }

    public func deadLetterCounts(matching filter: DeadLetterFilter) async throws -> [String: Int] {
        let (conditions, values) = DeadLetterQuery.conditions(filter)
        var counts: [String: Int] = [:]
        for (reason, count) in try await query(
            Self.query("SELECT reason, count(*) FROM dead_letters WHERE \(conditions) GROUP BY reason", values)
        ).decode((String, Int64).self) {
            counts[reason] = Int(count)
        }
        return counts
    }

    public func deadLetter(id: String) async throws -> DeadLetterRecord? {
        try await records(Self.query("SELECT \(DeadLetterQuery.columns) FROM dead_letters WHERE id = ?", [.text(id)])).first
    }

    public func claimDeadLetters(
        matching filter: DeadLetterFilter, limit: Int, claimant: String, at now: Date, lease: TimeInterval,
        resolvedBefore: Date?
    ) async throws -> [DeadLetterRecord] {
        let (conditions, values) = DeadLetterQuery.conditions(filter)
        let (claimable, claimValues) = DeadLetterQuery.claimable(
            resolvedBefore: resolvedBefore, leaseCutoff: now.addingTimeInterval(-lease))
        // SKIP LOCKED: a replay running at the same moment takes other letters instead of
        // waiting for these and then taking them again.
        let claimed = try await records(Self.query(
            """
            UPDATE dead_letters SET claim = ?, claim_ms = ? WHERE id IN (
                SELECT id FROM dead_letters WHERE \(conditions) AND \(claimable)
                ORDER BY last_failed_ms, id LIMIT ? FOR UPDATE SKIP LOCKED
            ) RETURNING \(DeadLetterQuery.columns)
            """,
            [.text(claimant), .integer(now.millisecondsSince1970)] + values + claimValues + [.integer(Int64(max(0, limit)))]))
        return claimed.sorted { ($0.lastFailedAt, $0.id) < ($1.lastFailedAt, $1.id) }
    }

    public func resolveDeadLetters(_ outcomes: [(id: String, outcome: String?)], claimant: String, at now: Date) async throws {
        guard !outcomes.isEmpty else { return }
        let ids = outcomes.map(\.id)
        // '' stands for "release only": the claim is cleared and the letter stays as it was.
        let resolutions = outcomes.map { $0.outcome ?? "" }
        let ms = now.millisecondsSince1970
        try await query("""
            UPDATE dead_letters d SET
                resolution = CASE WHEN o.outcome = '' THEN d.resolution ELSE o.outcome END,
                resolved_ms = CASE WHEN o.outcome = '' THEN d.resolved_ms ELSE \(ms) END,
                resolved_count = d.resolved_count + CASE WHEN o.outcome = '' THEN 0 ELSE 1 END,
                claim = NULL, claim_ms = NULL
            FROM unnest(\(ids)::text[], \(resolutions)::text[]) AS o(id, outcome)
            WHERE d.id = o.id AND d.claim = \(claimant)
            """)
    }

    public func purgeDeadLetters(matching filter: DeadLetterFilter) async throws -> Int {
        let (conditions, values) = DeadLetterQuery.conditions(filter)
        for count in try await query(
            Self.query("WITH d AS (DELETE FROM dead_letters WHERE \(conditions) RETURNING 1) SELECT count(*) FROM d", values)
        ).decode(Int64.self) {
            return Int(count)
        }
        return 0
    }

    public func traceLines(activityID: String, after sequence: Int64, limit: Int) async throws -> [TraceLine] {
        var lines: [TraceLine] = []
        for (seq, at, kind, detail) in try await query("""
            SELECT seq, at_ms, kind, detail FROM activity_trace WHERE activity_id = \(activityID) AND seq > \(sequence)
            ORDER BY seq LIMIT \(Int64(max(0, limit)))
            """).decode((Int64, Int64, String, String).self)
        {
            lines.append(TraceLine(
                sequence: seq,
                entry: TraceEntry(
                    activityID: activityID, at: Date(millisecondsSince1970: at), kind: TraceEntry.Kind(stored: kind),
                    detail: detail)))
        }
        return lines
    }

    public func traceTail(activityID: String, matching filter: TraceFilter, limit: Int) async throws -> TraceTail {
        let kinds = filter.kinds.map(\.rawValue).sorted()
        let text = filter.detailContains ?? ""
        // strpos, not LIKE: % and _ in the text are not wildcards. One statement, so the count
        // and the lines come from one snapshot.
        let conditions = """
            activity_id = $1 AND (cardinality($2::text[]) = 0 OR kind = ANY($2::text[])) AND ($3 = '' OR strpos(detail, $3) > 0)
            """
        var bindings = PostgresBindings(capacity: 4)
        bindings.append(activityID)
        bindings.append(kinds)
        bindings.append(text)
        bindings.append(Int64(max(0, limit)))
        let query = PostgresQuery(
            unsafeSQL: """
                SELECT seq, at_ms, kind, detail, (SELECT count(*) FROM activity_trace WHERE \(conditions))
                FROM activity_trace WHERE \(conditions)
                ORDER BY at_ms DESC, seq DESC LIMIT $4
                """,
            binds: bindings)
        var lines: [TraceLine] = []
        var matching = 0
        for (seq, at, kind, detail, count) in try await self.query(query).decode((Int64, Int64, String, String, Int64).self) {
            matching = Int(count)
            lines.append(TraceLine(
                sequence: seq,
                entry: TraceEntry(
                    activityID: activityID, at: Date(millisecondsSince1970: at), kind: TraceEntry.Kind(stored: kind),
                    detail: detail)))
        }
        return TraceTail(lines: lines.reversed(), matching: matching)
    }

    /// `sql` with its `?` placeholders numbered for PostgreSQL and `values` bound to them.
    static func query(_ sql: String, _ values: [SQLValue]) -> PostgresQuery {
        var numbered = ""
        var index = 0
        for character in sql {
            if character == "?" {
                index += 1
                numbered += "$\(index)"
            } else {
                numbered.append(character)
            }
        }
        var binds = PostgresBindings(capacity: values.count)
        for value in values {
            switch value {
            case .text(let text): binds.append(text)
            case .integer(let integer): binds.append(integer)
            }
        }
        return PostgresQuery(unsafeSQL: numbered, binds: binds)
    }

    private func records(_ query: PostgresQuery) async throws -> [DeadLetterRecord] {
        var letters: [DeadLetterRecord] = []
        for row in try await self.query(query).rows {
            let (id, reason, source, message, domain, activity, event, job, kind, body, routingKey, attempts,
                 first, last, kept, deaths, resolution, resolved, resolvedCount) = try row.decode(
                (String, String, String, String, String?, String?, String?, String?, String, Data, String, Int64,
                 Int64, Int64, Int64, String, String?, Int64?, Int64).self)
            letters.append(DeadLetterQuery.record(
                id: id, reason: reason, source: source, message: message, domain: domain, activityID: activity,
                eventID: event, jobID: job, payloadKind: kind, body: body, routingKey: routingKey, attempts: attempts,
                firstFailedMs: first, lastFailedMs: last, keptMs: kept, deaths: deaths, resolution: resolution,
                resolvedMs: resolved, resolvedCount: resolvedCount))
        }
        return letters
    }
}
