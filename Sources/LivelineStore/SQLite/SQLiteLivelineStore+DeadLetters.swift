import Foundation
import GRDB

// Tests: Tests/LivelineStoreTests/DeadLetterConformanceTests.swift

extension SQLiteLivelineStore {
    public func keepDeadLetters(_ letters: [DeadLetterRecord]) async throws -> Int {
        guard !letters.isEmpty else { return 0 }
        return try await write { db in
            let statement = try db.cachedStatement(sql: """
                INSERT INTO dead_letters (
                    id, reason, source, message, domain, activity_id, event_id, job_id, payload_kind, body, routing_key,
                    attempts, first_failed_ms, last_failed_ms, kept_ms, deaths
                ) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO NOTHING
                """)
            var inserted = 0
            for letter in letters {
                let values: [(any DatabaseValueConvertible)?] = [
                    letter.id, letter.reason, letter.source.rawValue, letter.message, letter.domain, letter.activityID,
                    letter.eventID, letter.jobID, letter.payloadKind.rawValue, letter.body, letter.routingKey,
                    letter.attempts, letter.firstFailedAt.millisecondsSince1970, letter.lastFailedAt.millisecondsSince1970,
                    letter.keptAt.millisecondsSince1970, DeadLetterQuery.encodeDeaths(letter.deaths),
                ]
                try statement.execute(arguments: StatementArguments(values))
                inserted += db.changesCount
            }
            return inserted
        }
    }

    public func deadLetters(matching filter: DeadLetterFilter, limit: Int) async throws -> [DeadLetterRecord] {
        let (conditions, values) = DeadLetterQuery.conditions(filter)
        return try await pool.read { db in
            try Row.fetchAll(
                db, sql: """
                    SELECT \(DeadLetterQuery.columns) FROM dead_letters WHERE \(conditions)
                    ORDER BY last_failed_ms DESC, id DESC LIMIT ?
                    """,
                arguments: Self.arguments(values + [.integer(Int64(max(0, limit)))])
            ).map(Self.deadLetter(from:))
        }
    }

    public func deadLetterCounts(matching filter: DeadLetterFilter) async throws -> [String: Int] {
        let (conditions, values) = DeadLetterQuery.conditions(filter)
        return try await pool.read { db in
            var counts: [String: Int] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT reason, count(*) FROM dead_letters WHERE \(conditions) GROUP BY reason",
                arguments: Self.arguments(values))
            {
                counts[row[0]] = row[1]
            }
            return counts
        }
    }

    public func deadLetter(id: String) async throws -> DeadLetterRecord? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT \(DeadLetterQuery.columns) FROM dead_letters WHERE id = ?", arguments: [id])
                .map(Self.deadLetter(from:))
        }
    }

    public func claimDeadLetters(
        matching filter: DeadLetterFilter, limit: Int, claimant: String, at now: Date, lease: TimeInterval,
        resolvedBefore: Date?
    ) async throws -> [DeadLetterRecord] {
        let (conditions, values) = DeadLetterQuery.conditions(filter)
        let (claimable, claimValues) = DeadLetterQuery.claimable(
            resolvedBefore: resolvedBefore, leaseCutoff: now.addingTimeInterval(-lease))
        // SQLite has one writer, so the select and the update are one atomic step.
        return try await write { db in
            let rows = try Row.fetchAll(
                db, sql: """
                    UPDATE dead_letters SET claim = ?, claim_ms = ? WHERE id IN (
                        SELECT id FROM dead_letters WHERE \(conditions) AND \(claimable)
                        ORDER BY last_failed_ms, id LIMIT ?
                    ) RETURNING \(DeadLetterQuery.columns)
                    """,
                arguments: Self.arguments(
                    [.text(claimant), .integer(now.millisecondsSince1970)] + values + claimValues
                        + [.integer(Int64(max(0, limit)))]))
            return rows.map(Self.deadLetter(from:)).sorted { ($0.lastFailedAt, $0.id) < ($1.lastFailedAt, $1.id) }
        }
    }

    public func resolveDeadLetters(_ outcomes: [(id: String, outcome: String?)], claimant: String, at now: Date) async throws {
        guard !outcomes.isEmpty else { return }
        try await write { db in
            let resolve = try db.cachedStatement(sql: """
                UPDATE dead_letters SET resolution = ?, resolved_ms = ?, resolved_count = resolved_count + 1,
                    claim = NULL, claim_ms = NULL
                WHERE id = ? AND claim = ?
                """)
            let release = try db.cachedStatement(
                sql: "UPDATE dead_letters SET claim = NULL, claim_ms = NULL WHERE id = ? AND claim = ?")
            for (id, outcome) in outcomes {
                if let outcome {
                    try resolve.execute(arguments: [outcome, now.millisecondsSince1970, id, claimant])
                } else {
                    try release.execute(arguments: [id, claimant])
                }
            }
        }
    }

    public func purgeDeadLetters(matching filter: DeadLetterFilter) async throws -> Int {
        let (conditions, values) = DeadLetterQuery.conditions(filter)
        return try await write { db in
            try db.execute(sql: "DELETE FROM dead_letters WHERE \(conditions)", arguments: Self.arguments(values))
            return db.changesCount
        }
    }

    public func traceLines(activityID: String, after sequence: Int64, limit: Int) async throws -> [TraceLine] {
        try await pool.read { db in
            try Row.fetchAll(
                db, sql: """
                    SELECT seq, at_ms, kind, detail FROM activity_trace WHERE activity_id = ? AND seq > ?
                    ORDER BY seq LIMIT ?
                    """,
                arguments: [activityID, sequence, max(0, limit)]
            ).map { row in
                TraceLine(
                    sequence: row[0],
                    entry: TraceEntry(
                        activityID: activityID, at: Date(millisecondsSince1970: row[1]),
                        kind: TraceEntry.Kind(stored: row[2]), detail: row[3]))
            }
        }
    }

    public func traceTail(activityID: String, matching filter: TraceFilter, limit: Int) async throws -> TraceTail {
        let kinds = filter.kinds.map(\.rawValue).sorted()
        let text = filter.detailContains.flatMap { $0.isEmpty ? nil : $0 }
        var conditions = "activity_id = ?"
        if !kinds.isEmpty { conditions += " AND kind IN (\(Array(repeating: "?", count: kinds.count).joined(separator: ", ")))" }
        // instr, not LIKE: LIKE ignores ASCII case and reads % and _ as wildcards.
        if text != nil { conditions += " AND instr(detail, ?) > 0" }
        let sql = conditions
        return try await pool.read { db in
            let arguments = StatementArguments([activityID] + kinds + (text.map { [$0] } ?? []))
            // One read transaction: the count and the lines agree.
            let matching = try Int.fetchOne(db, sql: "SELECT count(*) FROM activity_trace WHERE \(sql)", arguments: arguments) ?? 0
            let rows = try Row.fetchAll(
                db, sql: """
                    SELECT seq, at_ms, kind, detail FROM activity_trace WHERE \(sql)
                    ORDER BY at_ms DESC, seq DESC LIMIT ?
                    """,
                arguments: arguments + [max(0, limit)])
            let lines = rows.reversed().map { row in
                TraceLine(
                    sequence: row[0],
                    entry: TraceEntry(
                        activityID: activityID, at: Date(millisecondsSince1970: row[1]),
                        kind: TraceEntry.Kind(stored: row[2]), detail: row[3]))
            }
            return TraceTail(lines: lines, matching: matching)
        }
    }

    static func arguments(_ values: [SQLValue]) -> StatementArguments {
        StatementArguments(values.map { value -> any DatabaseValueConvertible in
            switch value {
            case .text(let text): text
            case .integer(let integer): integer
            }
        })
    }

    private static func deadLetter(from row: Row) -> DeadLetterRecord {
        DeadLetterQuery.record(
            id: row[0], reason: row[1], source: row[2], message: row[3], domain: row[4], activityID: row[5],
            eventID: row[6], jobID: row[7], payloadKind: row[8], body: row[9], routingKey: row[10], attempts: row[11],
            firstFailedMs: row[12], lastFailedMs: row[13], keptMs: row[14], deaths: row[15], resolution: row[16],
            resolvedMs: row[17], resolvedCount: row[18])
    }
}
