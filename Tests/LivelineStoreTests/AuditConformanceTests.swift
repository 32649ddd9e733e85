import Foundation
import LivelineStore
import LivelineStoreTestSupport
import Testing

@Suite("Audit")
struct AuditConformanceTests {
    /// Entries come back as written, newest `limit` oldest first, from `since`; retention
    /// prunes the old ones.
    @Test(arguments: StoreKind.underTest)
    func entriesAreListedAsWrittenAndPrunedByAge(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            let entries = (0..<4).map { index in
                AuditEntry(
                    at: Fixtures.time(Double(index) * 100), actor: index == 0 ? "root" : "alice",
                    actorSource: index == 0 ? .osUser : .given, command: "dlq purge",
                    parameters: ["reason": "BadTopic", "older-than": "\(index)d"], outcome: "purged \(index): BadTopic=\(index); ids: l-\(index)")
            }
            for entry in entries { try await store.appendAudit(entry) }
            #expect(try await store.audit(since: nil, limit: 10) == entries)
            #expect(try await store.audit(since: nil, limit: 2) == Array(entries.suffix(2)), "the newest, oldest first")
            #expect(try await store.audit(since: Fixtures.time(100), limit: 10) == Array(entries.dropFirst()))

            let far = Fixtures.time(-1_000_000)
            let cutoffs = RetentionCutoffs(
                traceBefore: far, activitiesBefore: far, pushToStartTokensBefore: far, deadLettersBefore: far, followsBefore: far,
                auditBefore: Fixtures.time(150))
            #expect(try await store.prune(cutoffs, limit: 10).auditEntries == 2)
            #expect(try await store.audit(since: nil, limit: 10) == Array(entries.suffix(2)))
        }
    }
}
