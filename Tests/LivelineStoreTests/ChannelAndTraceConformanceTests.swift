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
            let far = Fixtures.time(-1_000_000)
            let cutoffs = RetentionCutoffs(
                traceBefore: Fixtures.time(2), activitiesBefore: far, pushToStartTokensBefore: far, deadLettersBefore: far,
                followsBefore: far)
            #expect(try await store.prune(cutoffs, limit: 2).traceLines == 2, "a batch at a time")
            #expect(try await store.prune(cutoffs, limit: 2).traceLines == 1)
            #expect(try await store.prune(cutoffs, limit: 2).total == 0)
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

    /// A game's trace with 100,000 lines, as one with that many fans has: the tail is its
    /// newest lines, oldest first, with the count of every matching line, and the filters by
    /// kind and by a device's token prefix pick before the tail is cut.
    @Test(arguments: StoreKind.underTest)
    func theTailOfAHundredThousandLinesIsTheNewestWithTheCountLeftOut(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            let count = 100_000
            let kinds: [TraceEntry.Kind] = [.pushDecided, .apnsOutcome, .apnsOutcome, .retried]
            // Lines share milliseconds in fours, so the order within one millisecond is the sequence's.
            let entries = (0..<count).map { index in
                TraceEntry(
                    activityID: "g-1", at: Fixtures.time(Double(index / 4) / 1000), kind: kinds[index % kinds.count],
                    detail: "line \(index) to update token \(index % 1000 == 7 ? "80a1b2c3" : "5f9e04aa")…")
            }
            for start in stride(from: 0, to: count, by: 10_000) {
                try await store.appendTrace(Array(entries[start..<min(count, start + 10_000)]))
            }
            try await store.appendTrace([TraceEntry(activityID: "g-2", at: Fixtures.time(500), kind: .apnsOutcome, detail: "other")])

            let tail = try await store.traceTail(activityID: "g-1", matching: TraceFilter(), limit: 1_000)
            #expect(tail.matching == count)
            #expect(tail.leftOut == count - 1_000)
            #expect(tail.lines.map(\.entry) == Array(entries.suffix(1_000)))
            #expect(zip(tail.lines, tail.lines.dropFirst()).allSatisfy { $0.sequence < $1.sequence })

            let apns = try await store.traceTail(activityID: "g-1", matching: TraceFilter(kinds: [.apnsOutcome]), limit: 10)
            #expect(apns.matching == count / 2)
            #expect(apns.lines.map(\.entry) == Array(entries.filter { $0.kind == .apnsOutcome }.suffix(10)))

            let device = try await store.traceTail(
                activityID: "g-1", matching: TraceFilter(kinds: [.pushDecided, .retried], detailContains: "token 80a1b2c3"), limit: 5)
            let expected = entries.filter { [.pushDecided, .retried].contains($0.kind) && $0.detail.contains("token 80a1b2c3") }
            #expect(device.matching == expected.count && device.leftOut == expected.count - 5)
            #expect(device.lines.map(\.entry) == Array(expected.suffix(5)))

            // Nothing matches: no lines, nothing left out. A tail longer than the trace is all of it.
            let none = try await store.traceTail(activityID: "g-1", matching: TraceFilter(detailContains: "token 0000"), limit: 10)
            #expect(none.lines.isEmpty && none.matching == 0 && none.leftOut == 0)
            let other = try await store.traceTail(activityID: "g-2", matching: TraceFilter(), limit: 10)
            #expect(other.lines.map(\.entry.detail) == ["other"] && other.leftOut == 0)
            // Text is matched as written: % and _ are not wildcards, and case counts.
            #expect(try await store.traceTail(activityID: "g-1", matching: TraceFilter(detailContains: "line 1_"), limit: 1).matching == 0)
            #expect(try await store.traceTail(activityID: "g-1", matching: TraceFilter(detailContains: "LINE 1"), limit: 1).matching == 0)
        }
    }
}
