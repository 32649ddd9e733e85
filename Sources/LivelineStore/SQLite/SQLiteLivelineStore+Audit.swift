import Foundation
import GRDB

// Tests: Tests/LivelineStoreTests/AuditConformanceTests.swift

extension SQLiteLivelineStore {
    public func appendAudit(_ entry: AuditEntry) async throws {
        let parameters = try AuditEntry.encodedParameters(entry.parameters)
        try await write { db in
            try db.execute(sql: """
                INSERT INTO audit (at_ms, actor, actor_source, command, parameters, outcome) VALUES (?, ?, ?, ?, ?, ?)
                """, arguments: [
                    entry.at.millisecondsSince1970, entry.actor, entry.actorSource.rawValue, entry.command, parameters, entry.outcome,
                ])
        }
    }

    public func audit(since: Date?, limit: Int) async throws -> [AuditEntry] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT at_ms, actor, actor_source, command, parameters, outcome FROM (
                    SELECT * FROM audit WHERE at_ms >= ? ORDER BY seq DESC LIMIT ?) ORDER BY seq
                """, arguments: [since?.millisecondsSince1970 ?? Int64.min, limit]
            ).map { row in
                AuditEntry(
                    at: Date(millisecondsSince1970: row[0]), actor: row[1],
                    actorSource: AuditEntry.ActorSource(rawValue: row[2]) ?? .given, command: row[3],
                    parameters: AuditEntry.decodedParameters(row[4]), outcome: row[5])
            }
        }
    }
}
