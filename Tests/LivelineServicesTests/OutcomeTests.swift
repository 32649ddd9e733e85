import APNsSimulator
import Foundation
import LivelineAMQP
import LivelineCore
import LivelineModels
import LivelineProducer
import LivelineServices
import LivelineStore
import LivelineStoreTestSupport
import LivelineTestSupport
import Testing

/// Outcomes back to the producer: events through a real translator and sender to the
/// simulator, and what a service bound to `liveline.outcomes` hears about each.
@Suite("Outcomes for producers")
struct OutcomeTests {
    /// The ride domain reports outcomes; the flight domain does not.
    static func withPipeline<T: Sendable>(
        store kind: StoreKind, name: String = #function, _ body: (TranslatorHarness, SenderHarness) async throws -> T
    ) async throws -> T {
        let rides = OutcomeDomains(parsing: "ride")
        return try await withSender(bundleIDs: [TranslatorHarness.bundleId], store: kind, settings: { $0.outcomes = rides }) { sender in
            let store = try #require(sender.store as? any ActivityStore)
            return try await TranslatorHarness.run(on: store, name: name, topology: sender.topology, outcomes: rides) { translator, _ in
                try await body(translator, sender)
            }
        }
    }

    /// One event of each outcome the pipeline gives, each matched to its event by id: a
    /// delivery (with its apns-id), a device gone, a translator's dead letter (with the
    /// letter's id), a stale drop; and none for a domain that did not ask.
    @Test(arguments: StoreKind.underTest)
    func everyOutcomeReachesTheProducersQueue(store: StoreKind) async throws {
        try await Self.withPipeline(store: store) { translator, sender in
            let listener = try await OutcomeListener(sender.topology, connection: sender.connection)
            let rides = try await OutcomeListener(sender.topology, connection: sender.connection, keys: ["ride.delivered"])
            let token = randomDeviceToken(), gone = randomDeviceToken()
            try await sender.register(token, activityID: "r-ok")
            try await sender.register(gone, activityID: "r-gone")
            try await sender.register(randomDeviceToken(), activityID: "r-bad")
            sender.simulator.injectFault(.unregistered, forDevice: gone)

            // Events.base is ten minutes ago: these are seconds old, so none has expired.
            let delivered = try Events.ride("r-ok", user: "u-1", .driverEnRoute, at: 595)
            let deviceGone = try Events.ride("r-gone", user: "u-1", .driverEnRoute, at: 595)
            let invalid = try Events.ride("r-bad", user: "u-1", .driverEnRoute, at: 595).overriding(EventOverrides(relevanceScore: 150))
            try await translator.publisher.publish(contentsOf: [delivered, deviceGone, invalid])
            try await eventually("three outcomes") { listener.outcomes.count >= 3 }
            // Older than what r-ok shows now: dropped as stale.
            let stale = try Events.ride("r-ok", user: "u-1", .driverAssigned, at: 590)
            let silent = Events.flight("f-1", "boarding", gate: "A1", at: 10)
            let last = try Events.ride("r-none", user: "u-1", .driverEnRoute, at: 10)
            try await translator.publisher.publish(contentsOf: [stale, silent])
            try await translator.publisher.publish(last)
            try await eventually("the last event's outcome") { !listener.outcomes(of: last.id).isEmpty }

            let ok = try #require(listener.outcomes(of: delivered.id).first)
            #expect(listener.outcomes(of: delivered.id).count == 1)
            #expect(ok.data.outcome == .delivered && ok.data.domain == "ride" && ok.data.activityId == "r-ok")
            #expect(ok.type == "liveline.outcome.delivered" && ok.source == "liveline/sender" && ok.subject == "r-ok")
            #expect(ok.routingKey == "ride.delivered" && ok.specversion == "1.0")
            let push = try #require(sender.simulator.deliveries(toDevice: token).first)
            #expect(ok.data.apnsId == push.apnsID.lowercased(), "the apns-id APNs was given")
            #expect(ok.data.target == "update token \(token.prefix(8))…", "never the full token")
            #expect(ok.data.push == "update")

            let goneOutcome = try #require(listener.outcomes(of: deviceGone.id).first)
            #expect(goneOutcome.data.outcome == .deviceGone && goneOutcome.data.reason == "Unregistered")
            #expect(try await sender.tokens(of: "r-gone").isEmpty, "the token was removed")

            let letter = try #require(listener.outcomes(of: invalid.id).first)
            #expect(letter.data.outcome == .deadLettered && letter.data.reason == "invalid-override")
            #expect(letter.source == "liveline/translator" && letter.routingKey == "ride.dead-lettered")
            let (dead, _) = try #require(try await sender.deadLetters(1).first)
            #expect(dead.eventId == invalid.id)
            #expect(letter.data.deadLetterId != nil)

            #expect(listener.outcomes(of: stale.id).map(\.data.outcome) == [.dropped])
            #expect(listener.outcomes(of: stale.id).first?.data.reason == "stale")
            #expect(listener.outcomes(of: last.id).first?.data.reason == "noTarget")
            #expect(listener.outcomes.allSatisfy { $0.data.domain == "ride" }, "the flight domain did not ask for outcomes")
            #expect(Set(listener.outcomes.map(\.id)).count == listener.outcomes.count, "each outcome has an id of its own")
            // A queue bound to one outcome of one domain gets only those.
            #expect(rides.outcomes.map(\.data.eventId) == [delivered.id])
            await listener.close()
            await rides.close()
        }
    }

    /// A consumer's full queue refuses outcomes: they are dropped and counted, and the events
    /// go on as if no one listened.
    @Test func aFullOutcomeQueueDropsOutcomesWithoutSlowingThePipeline() async throws {
        try await Self.withPipeline(store: .sqlite) { translator, sender in
            let full = try await OutcomeListener(
                sender.topology, connection: sender.connection,
                arguments: ["x-max-length": 2, "x-overflow": "reject-publish"], consume: false)
            let events = try (0..<6).map { try Events.ride("r-\($0)", user: "u-1", .driverEnRoute, at: 10) }
            for event in events { try await translator.publisher.publish(event) }
            try await eventually("every event translated") {
                translator.metrics.total("liveline_translator_events_received_total") >= 6
            }
            try await eventually("the refused outcomes counted") {
                translator.metrics.total("liveline_outcomes_dropped_total", [("stage", "translator")]) == 4
            }
            #expect(translator.metrics.total("liveline_outcomes_published_total", [("stage", "translator")]) == 2)
            #expect(try await sender.messageCount(full.queue) == 2)
            // Nothing of the events' own was refused or retried for it.
            #expect(try await sender.messageCount(translator.topology.translateQueues[0]) == 0)
            await full.close()
        }
    }
}
