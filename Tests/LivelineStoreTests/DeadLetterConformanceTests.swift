import Foundation
import LivelineStore
import LivelineStoreTestSupport
import Testing

@Suite("Dead letters")
struct DeadLetterConformanceTests {
    static func letter(
        _ id: String, reason: String = "BadDeviceToken", domain: String? = "ride", activity: String? = "r-1", at seconds: Double,
        source: DeadLetterRecord.Source = .sender
    ) -> DeadLetterRecord {
        DeadLetterRecord(
            id: id, reason: reason, source: source, message: "m \(id)", domain: domain, activityID: activity,
            eventID: "e-\(id)", jobID: "j-\(id)", payloadKind: .job, body: Data("{\"id\":\"\(id)\"}".utf8), routingKey: "ride.update",
            attempts: 2, firstFailedAt: Fixtures.time(seconds - 1), lastFailedAt: Fixtures.time(seconds),
            keptAt: Fixtures.time(seconds + 1),
            deaths: [.init(queue: "liveline.send", reason: "delivery_limit", count: 1, exchange: "liveline.push",
                           routingKeys: ["ride.update"], time: Fixtures.time(seconds))])
    }

    @Test(arguments: StoreKind.underTest)
    func keepsEachLetterOnceAndReadsItBackWhole(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            let first = Self.letter("a", at: 10)
            #expect(try await store.keepDeadLetters([first, Self.letter("b", at: 20)]) == 2)
            // A redelivery after a crash before the ack: the id keeps it once, unchanged.
            var again = first
            again.message = "changed"
            #expect(try await store.keepDeadLetters([again]) == 0)
            #expect(try await store.deadLetter(id: "a") == first)
            #expect(try await store.deadLetter(id: "nope") == nil)
            #expect(try await store.deadLetters(matching: .init(), limit: 10).map(\.id) == ["b", "a"])
        }
    }

    @Test(arguments: StoreKind.underTest)
    func filtersByReasonDomainActivityTimeAndState(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            _ = try await store.keepDeadLetters([
                Self.letter("1", reason: "invalid-event", domain: nil, activity: nil, at: 10, source: .translator),
                Self.letter("2", reason: "BadDeviceToken", domain: "ride", activity: "r-1", at: 20),
                Self.letter("3", reason: "BadDeviceToken", domain: "score", activity: "g-1", at: 30),
                Self.letter("4", reason: "delivery_limit", domain: "ride", activity: "r-2", at: 40, source: .broker),
            ])
            func ids(_ filter: DeadLetterFilter, limit: Int = 10) async throws -> [String] {
                try await store.deadLetters(matching: filter, limit: limit).map(\.id)
            }
            #expect(try await ids(.init(reason: "BadDeviceToken")) == ["3", "2"])
            #expect(try await ids(.init(domain: "ride")) == ["4", "2"])
            #expect(try await ids(.init(activityID: "r-1")) == ["2"])
            #expect(try await ids(.init(since: Fixtures.time(20), until: Fixtures.time(40))) == ["3", "2"])
            #expect(try await ids(.init(), limit: 1) == ["4"])
            // Each letter is kept a second after its failure: "3" was kept at 31, not before it.
            #expect(try await ids(.init(keptBefore: Fixtures.time(31))) == ["2", "1"])
            #expect(try await store.deadLetterCounts(matching: .init()) == ["invalid-event": 1, "BadDeviceToken": 2, "delivery_limit": 1])
            #expect(try await store.deadLetterCounts(matching: .init(domain: "ride")) == ["BadDeviceToken": 1, "delivery_limit": 1])

            let claimed = try await store.claimDeadLetters(
                matching: .init(reason: "BadDeviceToken"), limit: 10, claimant: "x", at: Fixtures.time(100), lease: 60,
                resolvedBefore: nil)
            try await store.resolveDeadLetters([(claimed[0].id, "replayed"), (claimed[1].id, "skipped: ended")], claimant: "x",
                                               at: Fixtures.time(101))
            #expect(try await ids(.init(state: .pending)) == ["4", "1"])
            #expect(try await ids(.init(state: .replayed)) == ["2"])
            #expect(try await ids(.init(state: .skipped)) == ["3"])
            #expect(try await store.deadLetter(id: "3")?.resolution == .init(outcome: "skipped: ended", at: Fixtures.time(101), count: 1))
        }
    }

    @Test(arguments: StoreKind.underTest)
    func claimsAreExclusiveUntilTheirLeaseAndForcedReplaysSkipTheirOwnWork(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            _ = try await store.keepDeadLetters((1...6).map { Self.letter("\($0)", at: Double($0)) })
            let now = Fixtures.time(100)
            let first = try await store.claimDeadLetters(
                matching: .init(), limit: 4, claimant: "a", at: now, lease: 60, resolvedBefore: nil)
            #expect(first.map(\.id) == ["1", "2", "3", "4"], "oldest first")
            let second = try await store.claimDeadLetters(
                matching: .init(), limit: 4, claimant: "b", at: now, lease: 60, resolvedBefore: nil)
            #expect(second.map(\.id) == ["5", "6"], "never a letter another replay holds")

            // "a" dies without resolving; after the lease its letters can be taken again.
            #expect(try await store.claimDeadLetters(
                matching: .init(), limit: 10, claimant: "c", at: Fixtures.time(150), lease: 60, resolvedBefore: nil).isEmpty)
            let retaken = try await store.claimDeadLetters(
                matching: .init(), limit: 10, claimant: "c", at: Fixtures.time(161), lease: 60, resolvedBefore: nil)
            #expect(retaken.map(\.id) == ["1", "2", "3", "4", "5", "6"])
            // A resolve by a claimant that lost the claim changes nothing.
            try await store.resolveDeadLetters([("1", "replayed")], claimant: "a", at: Fixtures.time(162))
            #expect(try await store.deadLetter(id: "1")?.resolution == nil)
            try await store.resolveDeadLetters(retaken.map { ($0.id, "replayed") }, claimant: "c", at: Fixtures.time(162))

            // Resolved letters come back only when forced, and only those resolved before the run.
            #expect(try await store.claimDeadLetters(
                matching: .init(), limit: 10, claimant: "d", at: Fixtures.time(200), lease: 60, resolvedBefore: nil).isEmpty)
            let forced = try await store.claimDeadLetters(
                matching: .init(), limit: 10, claimant: "d", at: Fixtures.time(200), lease: 60, resolvedBefore: Fixtures.time(199))
            #expect(forced.count == 6)
            try await store.resolveDeadLetters(forced.map { ($0.id, "replayed") }, claimant: "d", at: Fixtures.time(201))
            #expect(try await store.claimDeadLetters(
                matching: .init(), limit: 10, claimant: "d", at: Fixtures.time(202), lease: 60, resolvedBefore: Fixtures.time(199)).isEmpty)
            #expect(try await store.deadLetter(id: "1")?.resolution?.count == 2)
            // A nil outcome only releases the claim.
            let held = try await store.claimDeadLetters(
                matching: .init(), limit: 1, claimant: "e", at: Fixtures.time(300), lease: 60, resolvedBefore: Fixtures.time(299))
            try await store.resolveDeadLetters([(held[0].id, nil)], claimant: "e", at: Fixtures.time(301))
            #expect(try await store.deadLetter(id: held[0].id)?.resolution?.count == 2)
            #expect(try await store.claimDeadLetters(
                matching: .init(), limit: 1, claimant: "f", at: Fixtures.time(302), lease: 60, resolvedBefore: Fixtures.time(299))
                .map(\.id) == [held[0].id])
        }
    }

    @Test(arguments: StoreKind.underTest)
    func purgesWhatTheFilterMatches(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            _ = try await store.keepDeadLetters([
                Self.letter("1", at: 10), Self.letter("2", domain: "score", at: 20), Self.letter("3", at: 30),
            ])
            #expect(try await store.purgeDeadLetters(matching: .init(domain: "ride", until: Fixtures.time(25))) == 1)
            #expect(try await store.deadLetters(matching: .init(), limit: 10).map(\.id) == ["3", "2"])
            #expect(try await store.purgeDeadLetters(matching: .init()) == 2)
            #expect(try await store.deadLetterCounts(matching: .init()).isEmpty)
        }
    }

    @Test(arguments: StoreKind.underTest)
    func traceLinesFollowInsertOrderAfterASequence(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            let entries = (0..<5).map { TraceEntry(activityID: "r-1", at: Fixtures.time(Double($0)), kind: .apnsOutcome, detail: "\($0)") }
            try await store.appendTrace(Array(entries.prefix(3)))
            try await store.appendTrace([TraceEntry(activityID: "r-2", at: Fixtures.time(0), kind: .replayed, detail: "other")])
            let first = try await store.traceLines(activityID: "r-1", after: 0, limit: 100)
            #expect(first.map(\.entry) == Array(entries.prefix(3)))
            try await store.appendTrace(Array(entries.suffix(2)))
            let next = try await store.traceLines(activityID: "r-1", after: first.last!.sequence, limit: 100)
            #expect(next.map(\.entry) == Array(entries.suffix(2)))
            #expect(try await store.traceLines(activityID: "r-1", after: 0, limit: 2).map(\.entry.detail) == ["0", "1"])
        }
    }

    /// SQLite inserts a batch in statements of 128, 64 … 1 rows: counts on either side of each
    /// size keep every line, once, in order.
    @Test(arguments: StoreKind.underTest)
    func everyLineOfABatchIsKeptInOrder(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            var expected: [String] = []
            for (batch, count) in [1, 2, 3, 127, 128, 129, 300].enumerated() {
                let entries = (0..<count).map {
                    TraceEntry(activityID: "r-batch", at: Fixtures.time(Double(batch)), kind: .apnsOutcome, detail: "\(batch).\($0)")
                }
                try await store.appendTrace(entries)
                expected += entries.map(\.detail)
            }
            #expect(try await store.traceLines(activityID: "r-batch", after: 0, limit: 1000).map(\.entry.detail) == expected)
        }
    }
}
