import Foundation

// Tests: Tests/LivelineStoreTests/DeadLetterConformanceTests.swift

/// The SQL both stores share for dead letters: the columns in the order
/// ``record(id:reason:source:message:domain:activityID:eventID:jobID:payloadKind:body:routingKey:attempts:firstFailedMs:lastFailedMs:keptMs:deaths:resolution:resolvedMs:resolvedCount:)``
/// reads them, and a filter as a `WHERE` clause with `?`
/// placeholders and its values (``SQLValue``).
enum DeadLetterQuery {
    static let columns = """
        id, reason, source, message, domain, activity_id, event_id, job_id, payload_kind, body, routing_key, attempts,
        first_failed_ms, last_failed_ms, kept_ms, deaths, resolution, resolved_ms, resolved_count
        """

    /// `filter` as conditions joined by `AND` (`TRUE` for none).
    static func conditions(_ filter: DeadLetterFilter) -> (sql: String, values: [SQLValue]) {
        var clauses: [String] = []
        var values: [SQLValue] = []
        if let reason = filter.reason { clauses.append("reason = ?"); values.append(.text(reason)) }
        if let domain = filter.domain { clauses.append("domain = ?"); values.append(.text(domain)) }
        if let activity = filter.activityID { clauses.append("activity_id = ?"); values.append(.text(activity)) }
        if let app = filter.app {
            // The keys `app/…`. A range from `app/` to `app0` would use the index, but PostgreSQL
            // compares text by its collation, where '/' and '0' need not sort as in ASCII.
            let prefix = app + "/"
            clauses.append("substr(activity_id, 1, CAST(? AS INTEGER)) = ?")
            values += [.integer(Int64(prefix.count)), .text(prefix)]
        }
        if let since = filter.since { clauses.append("last_failed_ms >= ?"); values.append(.integer(since.millisecondsSince1970)) }
        if let until = filter.until { clauses.append("last_failed_ms < ?"); values.append(.integer(until.millisecondsSince1970)) }
        if let kept = filter.keptBefore { clauses.append("kept_ms < ?"); values.append(.integer(kept.millisecondsSince1970)) }
        switch filter.state {
        case nil: break
        case .pending: clauses.append("resolution IS NULL")
        case .replayed: clauses.append("resolution = 'replayed'")
        case .skipped: clauses.append("resolution LIKE 'skipped%'")
        }
        return (clauses.isEmpty ? "TRUE" : clauses.joined(separator: " AND "), values)
    }

    /// The claim conditions on top of a filter: unresolved (or resolved before
    /// `resolvedBefore`), and not claimed within the lease.
    static func claimable(resolvedBefore: Date?, leaseCutoff: Date) -> (sql: String, values: [SQLValue]) {
        var sql = "(claim IS NULL OR claim_ms < ?)"
        var values: [SQLValue] = [.integer(leaseCutoff.millisecondsSince1970)]
        if let resolvedBefore {
            sql += " AND (resolution IS NULL OR resolved_ms < ?)"
            values.append(.integer(resolvedBefore.millisecondsSince1970))
        } else {
            sql += " AND resolution IS NULL"
        }
        return (sql, values)
    }

    static let deathsEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        encoder.outputFormatting = .sortedKeys
        return encoder
    }()

    static func encodeDeaths(_ deaths: [DeadLetterRecord.Death]) -> String {
        (try? String(decoding: deathsEncoder.encode(deaths), as: UTF8.self)) ?? "[]"
    }

    static func decodeDeaths(_ text: String) -> [DeadLetterRecord.Death] {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return (try? decoder.decode([DeadLetterRecord.Death].self, from: Data(text.utf8))) ?? []
    }

    /// A record from the values of ``columns``, in order.
    static func record(
        id: String, reason: String, source: String, message: String, domain: String?, activityID: String?,
        eventID: String?, jobID: String?, payloadKind: String, body: Data, routingKey: String, attempts: Int64,
        firstFailedMs: Int64, lastFailedMs: Int64, keptMs: Int64, deaths: String, resolution: String?,
        resolvedMs: Int64?, resolvedCount: Int64
    ) -> DeadLetterRecord {
        DeadLetterRecord(
            id: id, reason: reason, source: DeadLetterRecord.Source(rawValue: source) ?? .broker, message: message,
            domain: domain, activityID: activityID, eventID: eventID, jobID: jobID,
            payloadKind: DeadLetterRecord.PayloadKind(rawValue: payloadKind) ?? .unknown, body: body,
            routingKey: routingKey, attempts: Int(attempts), firstFailedAt: Date(millisecondsSince1970: firstFailedMs),
            lastFailedAt: Date(millisecondsSince1970: lastFailedMs), keptAt: Date(millisecondsSince1970: keptMs),
            deaths: decodeDeaths(deaths),
            resolution: zip(resolution, resolvedMs).map {
                .init(outcome: $0, at: Date(millisecondsSince1970: $1), count: Int(resolvedCount))
            })
    }
}

private func zip<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}
