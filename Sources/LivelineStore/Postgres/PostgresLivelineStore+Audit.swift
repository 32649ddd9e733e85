import Foundation
import PostgresNIO

// Tests: Tests/LivelineStoreTests/AuditConformanceTests.swift

extension PostgresLivelineStore {
    public func appendAudit(_ entry: AuditEntry) async throws {
        let parameters = try AuditEntry.encodedParameters(entry.parameters)
        let at = entry.at.millisecondsSince1970
        try await query("""
            INSERT INTO audit (at_ms, actor, actor_source, command, parameters, outcome)
            VALUES (\(at), \(entry.actor), \(entry.actorSource.rawValue), \(entry.command), \(parameters), \(entry.outcome))
            """)
    }

    public func audit(since: Date?, limit: Int) async throws -> [AuditEntry] {
        let since = since?.millisecondsSince1970 ?? Int64.min
        return try await query("""
            SELECT at_ms, actor, actor_source, command, parameters, outcome FROM (
                SELECT * FROM audit WHERE at_ms >= \(since) ORDER BY seq DESC LIMIT \(Int64(limit))) newest ORDER BY seq
            """).decode((Int64, String, String, String, String, String).self).map { at, actor, source, command, parameters, outcome in
            AuditEntry(
                at: Date(millisecondsSince1970: at), actor: actor, actorSource: AuditEntry.ActorSource(rawValue: source) ?? .given,
                command: command, parameters: AuditEntry.decodedParameters(parameters), outcome: outcome)
        }
    }
}
