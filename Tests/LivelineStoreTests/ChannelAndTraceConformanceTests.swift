import Foundation
import LivelineStore
import LivelineStoreTestSupport
import Testing

@Suite("Channels and traces")
struct ChannelAndTraceConformanceTests {
    @Test(arguments: StoreKind.underTest)
    func theFirstLiveChannelWins(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            let first = BroadcastChannel(domain: "score", key: "g-1", channelID: "Y2gx", createdAt: Fixtures.time(0))
            let second = BroadcastChannel(domain: "score", key: "g-1", channelID: "Y2gy", createdAt: Fixtures.time(1))
            #expect(try await store.createChannel(first) == .created(first))
            #expect(try await store.createChannel(second) == .existing(first))
            #expect(try await store.channel(domain: "score", key: "g-1") == first)
            #expect(try await store.channel(domain: "score", key: "g-2") == nil)
            #expect(try await store.markChannelDeleted(domain: "score", key: "g-1", at: Fixtures.time(5)))
            #expect(try await store.markChannelDeleted(domain: "score", key: "g-1", at: Fixtures.time(6)) == false)
            #expect(try await store.channel(domain: "score", key: "g-1")?.deletedAt == Fixtures.time(5))
            // A deleted channel makes room for a new one.
            #expect(try await store.createChannel(second) == .created(second))
        }
    }

    @Test(arguments: StoreKind.underTest)
    func traceReadsTheNewestEntriesOldestFirstAndPrunes(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            let entries = TraceEntry.Kind.allCases.enumerated().map { index, kind in
                TraceEntry(activityID: "r-1", at: Fixtures.time(Double(index)), kind: kind, detail: "step \(index)")
            }
            try await store.appendTrace(entries)
            try await store.appendTrace([TraceEntry(activityID: "r-2", at: Fixtures.time(0), kind: .dropped, detail: "other")])
            #expect(try await store.trace(activityID: "r-1", limit: 100) == entries)
            #expect(try await store.trace(activityID: "r-1", limit: 2) == Array(entries.suffix(2)))
            #expect(try await store.pruneTrace(olderThan: Fixtures.time(2)) == 3)
            #expect(try await store.trace(activityID: "r-1", limit: 100) == Array(entries.dropFirst(2)))
            #expect(try await store.trace(activityID: "r-2", limit: 100).isEmpty)
        }
    }

    /// A sender's batch of trace lines goes in as statements of 128, 64 … 1 rows; every row keeps
    /// its own text, empty and non-ASCII included, in order.
    @Test(arguments: StoreKind.underTest)
    func aLargeTraceBatchKeepsEveryRowAsWritten(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            let entries = (0..<301).map { index in
                TraceEntry(
                    activityID: "r-\(index % 3)", at: Fixtures.time(Double(index)), kind: TraceEntry.Kind.allCases[index % TraceEntry.Kind.allCases.count],
                    detail: index % 7 == 0 ? "" : "step \(index) ✓ \(String(repeating: "é", count: index % 40))")
            }
            try await store.appendTrace(entries)
            for activity in 0..<3 {
                #expect(try await store.trace(activityID: "r-\(activity)", limit: 1_000) == entries.filter { $0.activityID == "r-\(activity)" })
            }
        }
    }
}
