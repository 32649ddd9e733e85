import APNsSimulator
import Foundation
import LivelineAMQP
import LivelineCore
import LivelineMessaging
import LivelineStore
import LivelineStoreTestSupport
import LivelineTestSupport
import Logging
import ServiceLifecycle
import Testing
@testable import LivelineServices

/// The keeper and replay on the real broker and both stores, with the real sender and
/// simulator: letters from the sender and from the broker itself, then replayed.
@Suite("Dead letters: keeper and replay")
struct DeadLetterPipelineTests {
    /// Runs a keeper on the harness's topology while `body` runs.
    static func withKeeper<T: Sendable>(_ harness: SenderHarness, _ body: () async throws -> T) async throws -> T {
        let connection = try await SenderBroker.connect("keeper")
        let keeper = DeadLetterKeeper(connection: connection, store: harness.store, topology: harness.topology, logger: Broker.logger)
        let group = ServiceGroup(configuration: .init(services: [.init(service: keeper)], logger: Broker.logger))
        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            do {
                let result = try await body()
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
                await connection.close()
                return result
            } catch {
                await group.triggerGracefulShutdown()
                await connection.close()
                throw error
            }
        }
    }

    static func kept(_ store: any ActivityStore, _ count: Int, _ filter: DeadLetterFilter = .init()) async throws -> [DeadLetterRecord] {
        for _ in 0..<200 {
            let letters = try await store.deadLetters(matching: filter, limit: 1000)
            if letters.count >= count { return letters }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("the keeper stored fewer than \(count) letters")
        throw CancellationError()
    }

    @Test(arguments: StoreKind.underTest)
    func senderAndBrokerLettersAreKeptListedAndReplayedByTheirRules(store kind: StoreKind) async throws {
        try await withSender(store: kind) { harness in
            try await Self.withKeeper(harness) {
                let topology = harness.topology
                // 1. A token APNs refuses: the sender deletes it and dead-letters the job.
                let refused = randomDeviceToken()
                try await harness.register(refused, activityID: "r-refused")
                harness.simulator.injectFault(.badDeviceToken, forDevice: refused)
                let refusedJob = makeJob(target: .device(token: refused, kind: .update), activityID: "r-refused")
                // 2. A job the broker gives up on: rejected by a consumer of another work queue.
                let stuck = randomDeviceToken()
                try await harness.register(stuck, activityID: "r-stuck")
                let stuckJob = makeJob(target: .device(token: stuck, kind: .update), activityID: "r-stuck")
                let side = "\(topology.sendQueues[0]).side"
                try await harness.connection.declare(AMQPTopology(
                    exchanges: [], queues: [.init(side, arguments: [
                        "x-queue-type": "quorum", "x-dead-letter-exchange": .string(topology.deadExchange),
                        "x-dead-letter-strategy": "at-least-once", "x-overflow": "reject-publish", "x-delivery-limit": 5,
                    ])], bindings: []))
                try await harness.connection.publish(AMQPMessage(
                    exchange: "", routingKey: side, body: stuckJob.encoded(),
                    properties: AMQPProperties(contentType: "application/json", messageID: stuckJob.jobId)))
                let consumer = try await harness.connection.consume(queue: side, prefetch: 1)
                for try await delivery in consumer { delivery.reject(requeue: false); break }
                await consumer.close()
                // 3. Past the delivery limit: a consumer that keeps failing on it (nack, requeue).
                let limited = "\(topology.sendQueues[0]).limited"
                let limitedJob = makeJob(target: .device(token: stuck, kind: .update), activityID: "r-limited")
                try await harness.connection.declare(AMQPTopology(
                    exchanges: [], queues: [.init(limited, arguments: [
                        "x-queue-type": "quorum", "x-dead-letter-exchange": .string(topology.deadExchange),
                        "x-dead-letter-strategy": "at-least-once", "x-overflow": "reject-publish", "x-delivery-limit": 1,
                    ])], bindings: []))
                try await harness.connection.publish(AMQPMessage(
                    exchange: "", routingKey: limited, body: limitedJob.encoded(),
                    properties: AMQPProperties(contentType: "application/json", messageID: limitedJob.jobId)))
                let failing = try await harness.connection.consume(queue: limited, prefetch: 1)
                var attempts = 0
                for try await delivery in failing {
                    attempts += 1
                    delivery.nack(requeue: true)
                    if attempts == 2 { break }
                }
                await failing.close()
                // 4. A device that answers 500 once: retried through a tier, then delivered.
                let flaky = randomDeviceToken()
                try await harness.register(flaky, activityID: "r-refused", deviceID: "ipad")
                harness.simulator.injectFault(.internalServerError, forDevice: flaky, times: 1)
                let flakyJob = makeJob(target: .device(token: flaky, kind: .update), activityID: "r-refused")
                try await harness.publish([refusedJob, flakyJob])

                let letters = try await Self.kept(harness.store, 3)
                try? await harness.connection.delete(queue: side)
                try? await harness.connection.delete(queue: limited)
                let byReason = Dictionary(uniqueKeysWithValues: letters.map { ($0.reason, $0) })
                let overLimit = try #require(byReason["delivery_limit"])
                #expect(overLimit.source == .broker && overLimit.activityID == "r-limited" && overLimit.jobID == limitedJob.jobId)
                #expect(overLimit.deaths.first?.queue == limited && overLimit.deaths.first?.reason == "delivery_limit")
                let sent = try #require(byReason["BadDeviceToken"])
                #expect(sent.source == .sender && sent.activityID == "r-refused" && sent.jobID == refusedJob.jobId)
                #expect(sent.body == refusedJob.encoded() && sent.payloadKind == .job)
                let moved = try #require(byReason["rejected"])
                #expect(moved.source == .broker && moved.activityID == "r-stuck" && moved.deaths.first?.queue == side)
                #expect(try await harness.messageCount(topology.deadQueue) == 0, "the queue is only a buffer")
                #expect(try await harness.store.deadLetters(matching: .init(reason: "rejected"), limit: 10).map(\.id) == [moved.id])
                let trace = try await harness.store.traceLines(activityID: "r-stuck", after: 0, limit: 10)
                #expect(trace.contains { $0.entry.detail.contains("kept as dead letter \(moved.id)") })

                // The stuck activity exists now, as the translator would have stored it.
                _ = try await harness.store.applyChanges([ActivityChange(
                    activityID: "r-stuck", domain: "ride", attributesType: "RideAttributes", userID: "u-1", attributes: nil,
                    contentState: "{}", eventTime: stuckJob.eventTime.date, end: nil)])
                _ = try await harness.store.applyChanges([ActivityChange(
                    activityID: "r-refused", domain: "ride", attributesType: "RideAttributes", userID: "u-1", attributes: nil,
                    contentState: "{}", eventTime: refusedJob.eventTime.date, end: nil)])

                var replay = DeadLetterReplay(store: harness.store, connection: harness.connection, topology: topology)
                replay.outcomes = OutcomeReporter(domains: .all, topology: topology, stage: .dlq)
                let listener = try await OutcomeListener(topology, connection: harness.connection, keys: ["ride.replayed"])
                // A dry run says what would happen and changes nothing.
                let dry = try await replay.run(matching: .init(), limit: 100, force: false, dryRun: true) { _ in }
                #expect(dry.replayed == 1 && dry.skipped == ["token-removed": 1, "activity-unknown": 1])
                #expect(try await harness.store.deadLetters(matching: .init(state: .pending), limit: 10).count == 3)
                #expect(harness.simulator.deliveries(toDevice: stuck).isEmpty)

                let summary = try await replay.run(matching: .init(), limit: 100, force: false, dryRun: false) { _ in }
                #expect(summary.replayed == 1 && summary.skipped == ["token-removed": 1, "activity-unknown": 1] && summary.failed == 0)
                try await eventually("the replayed job delivered") { !harness.simulator.deliveries(toDevice: stuck).isEmpty }
                // Its producer hears of it: the one letter replayed, not the two skipped.
                try await eventually("the replayed outcome") { !listener.outcomes.isEmpty }
                let replayed = try #require(listener.outcomes.first)
                #expect(listener.outcomes.count == 1 && replayed.source == "liveline/dlq")
                #expect(replayed.data.outcome == .replayed && replayed.data.deadLetterId == moved.id)
                #expect(replayed.data.eventId == stuckJob.eventId && replayed.data.activityId == "r-stuck")
                await listener.close()
                #expect(harness.simulator.deliveries(toDevice: refused).isEmpty)
                #expect(try await harness.store.deadLetter(id: moved.id)?.resolution?.outcome == "replayed")
                #expect(try await harness.store.deadLetter(id: sent.id)?.resolution?.outcome == "skipped: token-removed")
                // Again: nothing is left without --force.
                #expect(try await replay.run(matching: .init(), limit: 100, force: false, dryRun: false) { _ in }.total == 0)
                let replayTrace = try await harness.store.traceLines(activityID: "r-stuck", after: 0, limit: 50)
                #expect(replayTrace.contains { $0.entry.kind == .replayed && $0.entry.detail.contains(moved.id) })

                // The refused activity's story, in order: the 500 and its retry, the delivery after
                // it, the refusal and its dead letter with the keeper's line, then the replay's skip.
                // The delivery's line follows the sender's group commit: wait for it, not a fixed time.
                try await eventually("the flaky device's delivery traced") {
                    try await harness.store.traceLines(activityID: "r-refused", after: 0, limit: 100)
                        .contains { $0.entry.detail.contains("delivered (200), attempt 2") }
                }
                let story = try await harness.store.traceLines(activityID: "r-refused", after: 0, limit: 100).map(\.entry)
                func position(_ kind: TraceEntry.Kind, _ text: String) -> Int? {
                    story.firstIndex { $0.kind == kind && $0.detail.contains(text) }
                }
                let retried = try #require(position(.retried, "HTTP 500") ?? position(.retried, "InternalServerError"))
                let delivered = try #require(position(.apnsOutcome, "delivered (200), attempt 2"))
                let refusedLine = try #require(position(.deadLettered, "BadDeviceToken"))
                let keptLine = try #require(position(.deadLettered, "kept as dead letter \(sent.id)"))
                let skippedLine = try #require(position(.replayed, "skipped, token-removed"))
                // The sender's line goes through its group commit, the keeper's through its own
                // batch, so those two may commit either way round; the replay comes after both.
                #expect(retried < delivered)
                #expect(refusedLine < skippedLine && keptLine < skippedLine)
                #expect(story[delivered].detail.contains("apns-id \(flakyJob.apnsId.uuidString.lowercased())"))
                #expect(!story.contains { $0.detail.contains(refused) || $0.detail.contains(flaky) }, "tokens only as prefixes")
            }
        }
    }

    @Test(arguments: StoreKind.underTest)
    func translatorLettersAreKeptAndComeBackWhenTheyFailAgain(store kind: StoreKind) async throws {
        try await TranslatorHarness.run(store: kind) { harness, _ in
            let connection = try await Broker.connect()
            let keeper = DeadLetterKeeper(connection: connection, store: harness.store, topology: harness.topology, logger: Broker.logger)
            let group = ServiceGroup(configuration: .init(services: [.init(service: keeper)], logger: Broker.logger))
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                // Whatever happens below, the keeper stops, so a failure never hangs the run.
                defer { Task { await group.triggerGracefulShutdown() } }
                let valid = try Events.ride("r-bad", .driverAssigned, at: 0).encoded(source: "//tests")
                let unknownDomain = Data(String(decoding: valid, as: UTF8.self)
                    .replacingOccurrences(of: "\"ride.status\"", with: "\"boat.status\"").utf8)
                try await harness.publishRaw(unknownDomain, routingKey: "boat.status")
                try await harness.publishRaw(Data("{not json".utf8), routingKey: "ride.status")

                let letters = try await Self.kept(harness.store, 2)
                let boat = try #require(letters.first { $0.domain == "boat" })
                #expect(boat.reason == "invalid-event" && boat.source == .translator && boat.payloadKind == .event)
                #expect(boat.activityID == "r-bad" && boat.body == unknownDomain && boat.routingKey == "boat.status")
                let junk = try #require(letters.first { $0.domain == nil })
                #expect(junk.body == Data("{not json".utf8) && junk.reason == "invalid-event")

                // Replayed before the domain exists, each fails again and comes back as a new letter.
                let replay = DeadLetterReplay(store: harness.store, connection: harness.control, topology: harness.topology)
                let summary = try await replay.run(matching: .init(), limit: 10, force: false, dryRun: false) { _ in }
                #expect(summary.replayed == 2)
                let again = try await Self.kept(harness.store, 4)
                #expect(again.filter { $0.state == .pending }.count == 2)
                #expect(again.filter { $0.state == .replayed }.map(\.id).sorted() == [boat.id, junk.id].sorted())
                #expect(Set(again.filter { $0.state == .pending }.map(\.body)) == [unknownDomain, Data("{not json".utf8)])
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
            }
            await connection.close()
        }
    }

    /// Event letters for a queue bound to the events exchange, counted by a test consumer.
    static func eventLetters(_ count: Int, topology: LivelineTopology) -> [DeadLetterRecord] {
        (0..<count).map { index in
            let body = Data(#"{"specversion":"1.0","id":"e-\#(index)","type":"ride.status","data":{"activityId":"r-\#(index)"}}"#.utf8)
            return DeadLetterRecord(
                id: "ev-\(index)", reason: index % 2 == 0 ? "invalid-event" : "over-budget", source: .translator,
                message: "", domain: "ride", activityID: "r-\(index)", eventID: "e-\(index)", payloadKind: .event,
                body: body, routingKey: "ride.status", attempts: 1, firstFailedAt: Date(), lastFailedAt: Date(), keptAt: Date())
        }
    }

    @Test(arguments: StoreKind.underTest)
    func twoReplaysAtOnceSendEachLetterOnceAndAKilledReplayLosesNothing(store kind: StoreKind) async throws {
        try await withBroker {
            try await kind.withStore { store in
                let topology = LivelineTopology(prefix: Broker.unique("dlq-replay"))
                let connection = try await Broker.connect()
                let other = try await Broker.connect()
                try await connection.declare(topology.amqp)
                // A queue of our own on the events exchange sees every republished event.
                let watch = "\(topology.translateQueues[0]).watch"
                try await connection.declare(AMQPTopology(
                    exchanges: [], queues: [.init(watch, arguments: ["x-queue-type": "quorum"])],
                    bindings: [.init(queue: watch, exchange: topology.eventsExchange, routingKey: "#")]))
                let letters = Self.eventLetters(400, topology: topology)
                #expect(try await store.keepDeadLetters(letters) == 400)
                // A replay that died after claiming 50 letters: they are held until the lease lapses.
                let crashed = try await store.claimDeadLetters(
                    matching: .init(), limit: 50, claimant: "crashed", at: Date(), lease: 1, resolvedBefore: nil)
                #expect(crashed.count == 50)
                // A letter kept after the replays began (as one they republish and that fails
                // again would be) waits for the next replay: a replay never loops on its own.
                var later = Self.eventLetters(1, topology: topology)[0]
                later.id = "kept-later"
                later.keptAt = Date().addingTimeInterval(3600)
                #expect(try await store.keepDeadLetters([later]) == 1)

                let first = Self.replay(store, connection, topology)
                let second = Self.replay(store, other, topology)
                let summaries = try await withThrowingTaskGroup(of: DeadLetterReplay.Summary.self) { group in
                    for replay in [first, second] {
                        group.addTask { try await replay.run(matching: .init(), limit: 1000, force: false, dryRun: false) { _ in } }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                let (sa, sb) = (summaries[0], summaries[1])
                #expect(sa.replayed + sb.replayed == 350, "each letter once, none of the crashed replay's")
                try await Task.sleep(for: .seconds(1.2))
                // The lease is the claimer's: a replay with a 1 s lease takes claims older than that.
                var afterCrash = Self.replay(store, connection, topology)
                afterCrash.lease = 1
                let late = try await afterCrash.run(matching: .init(), limit: 1000, force: false, dryRun: false) { _ in }
                #expect(late.replayed == 50, "the crashed replay's letters after its lease")

                var ids: [String: Int] = [:]
                var capped = 0
                let consumer = try await connection.consume(queue: watch, prefetch: 500)
                // Never hang on a missing message: the count check below fails instead.
                let stop = Task {
                    try await Task.sleep(for: .seconds(30))
                    await consumer.close()
                }
                defer { stop.cancel() }
                for try await delivery in consumer {
                    ids[delivery.properties.messageID ?? "?", default: 0] += 1
                    if delivery.properties.headers[TranslatorHeaders.priorityCap]?.intValue == 5 { capped += 1 }
                    #expect(delivery.properties.headers[DeadLetterHeaders.replayOf] != nil)
                    delivery.ack()
                    if ids.values.reduce(0, +) == 400 { break }
                }
                await consumer.close()
                #expect(ids.count == 400 && ids.values.allSatisfy { $0 == 1 })
                #expect(capped == 200, "over-budget letters go back at priority 5")
                #expect(try await store.deadLetterCounts(matching: .init(state: .replayed)).values.reduce(0, +) == 400)
                #expect(try await store.deadLetter(id: "kept-later")?.resolution == nil)
                // --force takes them again, once each.
                let forced = try await first.run(matching: .init(reason: "invalid-event"), limit: 1000, force: true, dryRun: false) { _ in }
                #expect(forced.replayed == 200)

                for queue in topology.amqp.queues.map(\.name) + [watch] { try? await connection.delete(queue: queue) }
                for exchange in topology.amqp.exchanges.map(\.name) { try? await connection.delete(exchange: exchange) }
                await connection.close()
                await other.close()
            }
        }
    }

    static func replay(_ store: any ActivityStore, _ connection: AMQPConnection, _ topology: LivelineTopology) -> DeadLetterReplay {
        var replay = DeadLetterReplay(store: store, connection: connection, topology: topology)
        replay.batchSize = 25
        return replay
    }
}
