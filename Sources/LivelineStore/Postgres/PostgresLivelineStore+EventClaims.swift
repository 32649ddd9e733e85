import Foundation
import PostgresNIO

// Tests: Tests/LivelineStoreTests/EventClaimConformanceTests.swift

extension PostgresLivelineStore {
    /// Two statements for any number of claims: the inserts, then the rows that were there.
    /// Two requests racing with one id both see one row: the same digest publishes twice (the
    /// translator drops the second copy), another digest is a conflict.
    public func claimEvents(_ claims: [EventClaim], now: Date) async throws -> [EventClaimOutcome] {
        guard !claims.isEmpty else { return [] }
        let ids = claims.map(\.eventID)
        let producers = claims.map(\.producer)
        let digests = claims.map(\.digest)
        let at = now.millisecondsSince1970
        return try await transaction { connection in
            var inserted: Set<String> = []
            for try await id in try await connection.query("""
                INSERT INTO event_claims (event_id, producer, digest, received_ms)
                SELECT id, producer, digest, \(at) FROM unnest(\(ids)::text[], \(producers)::text[], \(digests)::text[]) AS c(id, producer, digest)
                ON CONFLICT (event_id) DO NOTHING
                RETURNING event_id
                """, logger: self.logger).decode(String.self) {
                inserted.insert(id)
            }
            var stored: [String: (digest: String, publishedMs: Int64?)] = [:]
            let others = ids.filter { !inserted.contains($0) }
            if !others.isEmpty {
                for try await (id, digest, published) in try await connection.query(
                    "SELECT event_id, digest, published_ms FROM event_claims WHERE event_id = ANY(\(others))", logger: self.logger
                ).decode((String, String, Int64?).self) {
                    stored[id] = (digest, published)
                }
            }
            return claims.map { claim in
                if inserted.contains(claim.eventID) { return .publish }
                let row = stored[claim.eventID]
                return EventClaimOutcome(stored: row?.digest, publishedMs: row?.publishedMs, claim: claim)
            }
        }
    }

    public func markEventsPublished(_ eventIDs: [String], now: Date) async throws {
        guard !eventIDs.isEmpty else { return }
        try await query("""
            UPDATE event_claims SET published_ms = \(now.millisecondsSince1970)
            WHERE event_id = ANY(\(eventIDs)) AND published_ms IS NULL
            """)
    }
}

extension PostgresLivelineStore {
    public func recordOutcomes(_ outcomes: [RecordedOutcome]) async throws -> Set<String> {
        guard !outcomes.isEmpty else { return [] }
        let ids = outcomes.map(\.outcomeID), events = outcomes.map(\.eventID), domains = outcomes.map(\.domain)
        let at = outcomes.map(\.at.millisecondsSince1970), bodies = outcomes.map(\.body)
        var kept: Set<String> = []
        for id in try await query("""
            INSERT INTO event_outcomes (outcome_id, event_id, domain, at_ms, body)
            SELECT * FROM unnest(\(ids)::text[], \(events)::text[], \(domains)::text[], \(at)::bigint[], \(bodies)::text[])
            ON CONFLICT (outcome_id) DO NOTHING
            RETURNING outcome_id
            """).decode(String.self) {
            kept.insert(id)
        }
        return kept
    }

    public func outcomes(eventID: String, limit: Int) async throws -> [RecordedOutcome] {
        var outcomes: [RecordedOutcome] = []
        for (id, event, domain, at, body) in try await query("""
            SELECT outcome_id, event_id, domain, at_ms, body FROM event_outcomes
            WHERE event_id = \(eventID) ORDER BY at_ms, outcome_id LIMIT \(limit)
            """).decode((String, String, String, Int64, String).self) {
            outcomes.append(RecordedOutcome(outcomeID: id, eventID: event, domain: domain, at: Date(millisecondsSince1970: at), body: body))
        }
        return outcomes
    }
}
