import Foundation
import GRDB

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
