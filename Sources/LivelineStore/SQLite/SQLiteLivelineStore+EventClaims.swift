import Foundation
import GRDB

// Tests: Tests/LivelineStoreTests/EventClaimConformanceTests.swift

extension SQLiteLivelineStore {
    public func claimEvents(_ claims: [EventClaim], now: Date) async throws -> [EventClaimOutcome] {
        try await write { db in
            try claims.map { claim in
                try db.execute(sql: """
                    INSERT INTO event_claims (event_id, producer, digest, received_ms) VALUES (?, ?, ?, ?)
                    ON CONFLICT (event_id) DO NOTHING
                    """, arguments: [claim.eventID, claim.producer, claim.digest, now.millisecondsSince1970])
                guard db.changesCount == 0 else { return .publish }
                let row = try Row.fetchOne(
                    db, sql: "SELECT digest, published_ms FROM event_claims WHERE event_id = ?", arguments: [claim.eventID])
                return EventClaimOutcome(stored: row?[0], publishedMs: row?[1], claim: claim)
            }
        }
    }

    public func markEventsPublished(_ eventIDs: [String], now: Date) async throws {
        guard !eventIDs.isEmpty else { return }
        try await write { db in
            try db.execute(sql: """
                UPDATE event_claims SET published_ms = ? WHERE event_id IN (SELECT value FROM json_each(?)) AND published_ms IS NULL
                """, arguments: [now.millisecondsSince1970, Self.json(eventIDs)])
        }
    }
}

extension SQLiteLivelineStore {
    public func recordOutcomes(_ outcomes: [RecordedOutcome]) async throws -> Set<String> {
        guard !outcomes.isEmpty else { return [] }
        return try await write { db in
            var kept: Set<String> = []
            for outcome in outcomes {
                try db.execute(sql: """
                    INSERT INTO event_outcomes (outcome_id, event_id, domain, at_ms, body) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (outcome_id) DO NOTHING
                    """, arguments: [outcome.outcomeID, outcome.eventID, outcome.domain, outcome.at.millisecondsSince1970, outcome.body])
                if db.changesCount > 0 { kept.insert(outcome.outcomeID) }
            }
            return kept
        }
    }

    public func outcomes(eventID: String, limit: Int) async throws -> [RecordedOutcome] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT outcome_id, event_id, domain, at_ms, body FROM event_outcomes WHERE event_id = ? ORDER BY at_ms, outcome_id LIMIT ?
                """, arguments: [eventID, limit]
            ).map { row in
                RecordedOutcome(outcomeID: row[0], eventID: row[1], domain: row[2], at: Date(millisecondsSince1970: row[3]), body: row[4])
            }
        }
    }
}
