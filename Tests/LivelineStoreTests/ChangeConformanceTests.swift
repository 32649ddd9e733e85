import Foundation
import LivelineStore
import LivelineStoreTestSupport
import Testing

@Suite("Applying changes")
struct ChangeConformanceTests {
    @Test(arguments: StoreKind.underTest)
    func firstChangeCreatesAnActiveActivity(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            let outcomes = try await store.applyChanges([Fixtures.change("r-1", at: 1, started: 1)])
            #expect(outcomes == [.applied])
            let activity = try #require(try await store.activity(id: "r-1"))
            #expect(activity.status == .active)
            #expect(activity.userID == "u-1")
            #expect(activity.domain == "ride")
            #expect(activity.attributesType == "RideAttributes")
            #expect(activity.contentState == #"{"status":"at-1.0"}"#)
            #expect(activity.attributes == #"{"rideId":"r"}"#)
            #expect(activity.lastEventAt == Fixtures.time(1))
            #expect(activity.startedAt == Fixtures.time(1))
            #expect(activity.endedAt == nil)
        }
    }

    @Test(arguments: StoreKind.underTest)
    func eventIDStatusPushTimestampAndStartAreKept(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            var first = Fixtures.change("r-1", at: 1)
            first.eventID = "e-1"
            first.status = "driverAssigned"
            first.pushTimestamp = 1_795_000_000
            first.pushToStartSentAt = Fixtures.time(1)
            _ = try await store.applyChanges([first])
            let stored = try #require(try await store.activity(id: "r-1"))
            #expect(stored.lastEventID == "e-1")
            #expect(stored.lastStatus == "driverAssigned")
            #expect(stored.lastPushTimestamp == 1_795_000_000)
            #expect(stored.pushToStartSentAt == Fixtures.time(1))

            // A change that sent nothing keeps the last push timestamp; the first start stays.
            var second = Fixtures.change("r-1", at: 2)
            second.eventID = "e-2"
            second.status = "driverArrived"
            second.pushToStartSentAt = Fixtures.time(2)
            _ = try await store.applyChanges([second])
            let snapshot = try #require(try await store.loadSnapshots([
                SnapshotRequest(activityID: "r-1", userID: "u-1", attributesType: "RideAttributes"),
            ])["r-1"]?.activity)
            #expect(snapshot.lastEventID == "e-2")
            #expect(snapshot.lastStatus == "driverArrived")
            #expect(snapshot.lastPushTimestamp == 1_795_000_000)
            #expect(snapshot.pushToStartSentAt == Fixtures.time(1))
        }
    }

    @Test(arguments: StoreKind.underTest)
    func onlyNewerEventsApply(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            _ = try await store.applyChanges([Fixtures.change("r-1", at: 5, started: 5)])
            let outcomes = try await store.applyChanges([
                Fixtures.change("r-1", at: 4, started: 4), Fixtures.change("r-1", at: 5), Fixtures.change("r-1", at: 5.001, started: 5.001),
            ])
            #expect(outcomes == [.stale, .stale, .applied])
            let activity = try #require(try await store.activity(id: "r-1"))
            #expect(activity.lastEventAt == Fixtures.time(5.001))
            #expect(activity.startedAt == Fixtures.time(5), "the first start stored stays")
        }
    }

    @Test(arguments: StoreKind.underTest)
    func changesOfOneActivityInABatchApplyInOrder(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            let outcomes = try await store.applyChanges([
                Fixtures.change("a", at: 1), Fixtures.change("b", at: 3), Fixtures.change("a", at: 2),
                Fixtures.change("b", at: 2), Fixtures.change("a", at: 3, end: "completed"), Fixtures.change("a", at: 4),
            ])
            #expect(outcomes == [.applied, .applied, .applied, .stale, .applied, .ended])
            let a = try #require(try await store.activity(id: "a"))
            #expect(a.status == .ended)
            #expect(a.endReason == "completed")
            #expect(a.endedAt == Fixtures.time(3))
            #expect(try await store.activity(id: "b")?.lastEventAt == Fixtures.time(3))
        }
    }

    @Test(arguments: StoreKind.underTest)
    func nothingAppliesAfterAnEnd(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            _ = try await store.applyChanges([Fixtures.change("r-1", at: 1, end: "cancelled")])
            #expect(try await store.applyChanges([Fixtures.change("r-1", at: 9)]) == [.ended])
            #expect(try await store.applyChanges([Fixtures.change("r-1", at: 0.5)]) == [.ended])
            let activity = try #require(try await store.activity(id: "r-1"))
            #expect(activity.contentState == #"{"status":"at-1.0"}"#)
        }
    }

    /// A translator that stored an event and died before publishing its push leaves the
    /// event as the stored one: the next attempt at it must hear so, not "stale".
    @Test(arguments: StoreKind.underTest)
    func anEventAlreadyStoredIsToldApartFromAStaleOne(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            func change(_ id: String, at seconds: Double, event: String, end: String? = nil) -> ActivityChange {
                var change = Fixtures.change(id, at: seconds, end: end)
                change.eventID = event
                return change
            }
            _ = try await store.applyChanges([change("r-1", at: 5, event: "e-5"), change("r-2", at: 5, event: "x-5", end: "completed")])
            let outcomes = try await store.applyChanges([
                change("r-1", at: 5, event: "e-5"), change("r-1", at: 4, event: "e-4"),
                change("r-2", at: 5, event: "x-5", end: "completed"), change("r-2", at: 6, event: "x-6"),
            ])
            #expect(outcomes == [.alreadyApplied, .stale, .alreadyApplied, .ended])
        }
    }

    @Test(arguments: StoreKind.underTest)
    func missingAttributesKeepTheStoredOnes(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            _ = try await store.applyChanges([Fixtures.change("r-1", at: 1)])
            _ = try await store.applyChanges([Fixtures.change("r-1", at: 2, attributes: nil)])
            #expect(try await store.activity(id: "r-1")?.attributes == #"{"rideId":"r"}"#)
        }
    }

    @Test(arguments: StoreKind.underTest)
    func traceEntriesAreWrittenWithTheBatch(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            let trace = [TraceEntry(activityID: "r-1", at: Fixtures.time(1), kind: .eventReceived, detail: "event e-1")]
            _ = try await store.applyChanges([Fixtures.change("r-1", at: 1)], trace: trace)
            #expect(try await store.trace(activityID: "r-1", limit: 10) == trace)
        }
    }

    @Test(arguments: StoreKind.underTest)
    func aLargeBatchKeepsEveryTraceEntryInOrder(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            // More entries than one insert statement takes, all at the same millisecond.
            let trace = (0..<250).map {
                TraceEntry(activityID: "r-1", at: Fixtures.time(1), kind: .eventReceived, detail: "event e-\($0) \"quoted\"")
            }
            _ = try await store.applyChanges([Fixtures.change("r-1", at: 1)], trace: trace)
            #expect(try await store.trace(activityID: "r-1", limit: 1_000) == trace)
        }
    }

    @Test(arguments: StoreKind.underTest)
    func anEventHandsAPendingRowToItsUserAndDropsTheOtherUsersTokens(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            #expect(try await store.registerUpdateToken(Fixtures.registration("r-1", user: "intruder"))
                == .created(createdActivity: true))
            let request = SnapshotRequest(activityID: "r-1", userID: "u-1", attributesType: "RideAttributes")
            #expect(try await store.loadSnapshots([request])["r-1"]?.updateTokens == [])
            #expect(try await store.applyChanges([Fixtures.change("r-1", at: 1, user: "u-1")]) == [.applied])
            #expect(try await store.activity(id: "r-1")?.userID == "u-1")
            #expect(try await store.loadSnapshots([request])["r-1"]?.updateTokens == [])
            #expect(try await store.registerUpdateToken(Fixtures.registration("r-1", user: "u-1"))
                == .created(createdActivity: false))
        }
    }

    @Test(arguments: StoreKind.underTest)
    func theOwnerOfAnActiveActivityIsKept(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            _ = try await store.applyChanges([Fixtures.change("r-1", at: 1, user: "u-1")])
            _ = try await store.applyChanges([Fixtures.change("r-1", at: 2, user: "u-2")])
            #expect(try await store.activity(id: "r-1")?.userID == "u-1")
        }
    }

    @Test(arguments: StoreKind.underTest)
    func priorityBudgetCountsWithinItsWindow(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            _ = try await store.applyChanges([Fixtures.change("a", at: 1), Fixtures.change("b", at: 1)])
            var spent = try await store.spendPriorityBudget(["a", "a", "b", "missing"], at: Fixtures.time(10), window: 3600)
            #expect(spent == ["a": 2, "b": 1])
            spent = try await store.spendPriorityBudget(["a"], at: Fixtures.time(20), window: 3600)
            #expect(spent == ["a": 3])
            let budget = try #require(try await store.activity(id: "a")).budget
            #expect(budget == PriorityBudget(spent: 3, windowStart: Fixtures.time(10)))
            spent = try await store.spendPriorityBudget(["a"], at: Fixtures.time(10 + 3600), window: 3600)
            #expect(spent == ["a": 1])
            #expect(try await store.activity(id: "a")?.budget.windowStart == Fixtures.time(10 + 3600))
        }
    }

    /// The budget goes with the changes: spent for a demand whose change applied or that names
    /// none, never for one whose change was stale or came after the end.
    @Test(arguments: StoreKind.underTest)
    func theBudgetIsSpentWithTheChangesForTheOnesThatApplied(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            _ = try await store.applyChanges([Fixtures.change("b", at: 5), Fixtures.change("c", at: 1)])
            let demands = BudgetDemands(
                [
                    .init(activityID: "a", changeIndex: 0), .init(activityID: "b", changeIndex: 1),
                    .init(activityID: "c", changeIndex: nil), .init(activityID: "a", changeIndex: 0),
                ], at: Fixtures.time(10), window: 3600)
            let (outcomes, spent) = try await store.applyChanges(
                [Fixtures.change("a", at: 1), Fixtures.change("b", at: 2)], trace: [], spending: demands)
            #expect(outcomes == [.applied, .stale])
            #expect(spent == ["a": 2, "c": 1], "b's change was stale: nothing spent for it")
            #expect(try await store.activity(id: "b")?.budget.spent == 0)
            let none = try await store.applyChanges([], trace: [], spending: BudgetDemands([], at: Fixtures.time(11), window: 3600))
            #expect(none.outcomes.isEmpty && none.spent.isEmpty)
        }
    }
}
