import Foundation
import LivelineAMQP
import LivelineCore
import LivelineMessaging
import LivelineProducer
import LivelineStore
import LivelineStoreTestSupport
import LivelineTestSupport
import MetricsTestKit
import Testing

@testable import LivelineServices

/// A batch planned on a snapshot the store no longer holds by the time it is written:
/// another worker took the same messages while this one was cut off from the broker, or an
/// earlier attempt stored them and died before publishing. Whichever way, the event is
/// either published or dropped with its reason in the trace, never silently.
@Suite(.timeLimit(.minutes(3)))
struct UnappliedChangeTests {
    /// Plans `event` on what the store holds now, lets `meanwhile` write, then stores the plan.
    static func store(
        _ event: LivelineEvent, redelivered: Bool = true, on store: any ActivityStore,
        meanwhile: (BatchProcessor) async throws -> Void
    ) async throws -> BatchProcessor.PreparedBatch {
        try await withBroker {
            let publisher = try await Broker.connect(name: "unapplied-change")
            defer { Task { await publisher.close() } }
            let processor = BatchProcessor(
                translator: TranslatorHarness.translator, store: store, publisher: publisher,
                topology: LivelineTopology(prefix: "unapplied-change", retryTiers: []), settings: TranslatorSettings(),
                metrics: TranslatorMetrics(factory: TestMetrics()), logger: Broker.logger)
            let body = try event.encoded(source: "//tests.liveline")
            let parsed = await processor.parse([.init(body: body, redelivered: redelivered)])
            let planned = try await processor.plan(parsed, after: nil, whileStoring: false)
            try await meanwhile(processor)
            return try await processor.store(planned)
        }
    }

    /// What another attempt at `event` stores: the same changes this plan would.
    static func storedElsewhere(_ event: LivelineEvent, by processor: BatchProcessor) async throws {
        let parsed = await processor.parse([.init(body: try event.encoded(source: "//tests.liveline"), redelivered: false)])
        let planned = try await processor.plan(parsed, after: nil, whileStoring: false)
        #expect(try await processor.store.applyChanges(planned.plan.changes) == [.applied])
    }

    /// u-9's phone, registered for the ride `activity`.
    static func registerPhone(for activity: String, on store: any ActivityStore) async throws {
        _ = try await store.registerUpdateToken(UpdateTokenRegistration(
            activityID: activity, deviceID: "d-1", userID: "u-9", token: Events.tokenA, domain: "ride",
            attributesType: TranslatorHarness.translator.domain(named: "ride")?.attributesType, at: Date()))
    }

    /// A redelivery of an event an earlier attempt stored: that attempt may have died before
    /// publishing, so the push goes out again.
    @Test(arguments: StoreKind.underTest)
    func anEventAnotherAttemptStoredFirstIsPublishedAgain(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            try await Self.registerPhone(for: "r-1", on: store)
            let event = try Events.ride("r-1", .driverEnRoute, at: 1, id: "e-1")
            let prepared = try await Self.store(event, on: store) { try await Self.storedElsewhere(event, by: $0) }
            #expect(prepared.jobsToPublish.map(\.activityId) == ["r-1"], "its push goes out: the other attempt may never have published it")
            #expect(prepared.dropped.isEmpty)
            let trace = try await store.trace(activityID: "r-1", limit: 10).map(\.detail)
            #expect(trace.contains { $0.hasPrefix("event e-1 at ") && $0.hasSuffix("stored by an earlier attempt; jobs published again") })
        }
    }

    /// A first delivery of an event already stored is a second copy of one publish (a
    /// reshard routes to both layouts for a moment): the other copy's translator sends it.
    @Test(arguments: StoreKind.underTest)
    func aSecondCopyOfAnEventStoredMeanwhileIsADuplicate(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            try await Self.registerPhone(for: "r-1", on: store)
            let event = try Events.ride("r-1", .driverEnRoute, at: 1, id: "e-1")
            let prepared = try await Self.store(event, redelivered: false, on: store) { try await Self.storedElsewhere(event, by: $0) }
            #expect(prepared.jobsToPublish.isEmpty)
            #expect(prepared.dropped == ["duplicate-in-store": 1])
            let drops = try await store.trace(activityID: "r-1", limit: 10).filter { $0.kind == .dropped }.map(\.detail)
            #expect(drops.count == 1 && drops.first?.contains("(driverEnRoute): duplicate: not sent") == true, "\(drops)")
        }
    }

    @Test(arguments: StoreKind.underTest)
    func anEventTheStoreHoldsANewerOneForIsDroppedWithItsReason(kind: StoreKind) async throws {
        try await kind.withStore { (store: any ActivityStore) async throws in
            try await Self.registerPhone(for: "r-1", on: store)
            let older = try Events.ride("r-1", .driverEnRoute, at: 1, id: "e-1")
            let newer = try Events.ride("r-1", .driverArrived, at: 2, id: "e-2")
            let prepared = try await Self.store(older, on: store) { try await Self.storedElsewhere(newer, by: $0) }
            #expect(prepared.jobsToPublish.isEmpty)
            #expect(prepared.dropped == ["stale-in-store": 1])
            let drops = try await store.trace(activityID: "r-1", limit: 10).filter { $0.kind == .dropped }.map(\.detail)
            #expect(drops.count == 1)
            #expect(drops.first?.hasPrefix("event e-1 at ") == true)
            #expect(drops.first?.hasSuffix("(driverEnRoute): stale: not sent, the store holds a newer event stored meanwhile") == true)
        }
    }
}
