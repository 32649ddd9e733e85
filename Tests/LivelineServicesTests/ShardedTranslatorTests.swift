import Foundation
import LivelineAMQP
import LivelineCore
import LivelineMessaging
import LivelineProducer
import LivelineServices
import LivelineStore
import LivelineStoreTestSupport
import LivelineTestSupport
import Logging
import MetricsTestKit
import ServiceLifecycle
import Synchronization
import Testing

/// Several translators on one sharded stage, each with its own connections and counters, as
/// separate processes would be: the shards are shared out, a worker that leaves hands its
/// shards over, and one activity's jobs stay in one send shard, in order, throughout.
@Suite(.timeLimit(.minutes(3)))
struct ShardedTranslatorTests {
    @Test(arguments: StoreKind.underTest)
    func fourTranslatorsShareEightShardsAndKeepOrderAcrossAHandover(store kind: StoreKind) async throws {
        try await withBroker {
            try await kind.withStore { store in
                let topology = LivelineTopology(
                    prefix: Broker.unique("sharded-translators"), retryTiers: [], translateShards: 8, sendShards: 4)
                let control = try await Broker.connect(name: "sharded-control")
                try await control.declare(topology.amqp)
                let activities = (0..<24).map { "sh-\($0)" }
                try await registerDevices(activities, in: store)
                let workers = try await (0..<4).asyncMap { try await Worker.start($0, topology: topology, store: store) }
                let held = { workers.map { $0.held(topology) } }
                try await eventually("8 shards over 4 workers, 2 ± 1 each") {
                    held().reduce(0, +) == 8 && held().allSatisfy { (1...3).contains($0) }
                }
                // Once the handovers settle, each shard has its one consumer (during one, the
                // shard being drained has none for a moment, never two).
                try await eventually("one consumer on every shard") {
                    var counts: [Int] = []
                    for queue in topology.translateQueues { counts.append(try await control.consumerCount(queue: queue)) }
                    #expect(counts.allSatisfy { $0 <= 1 }, "never two consumers: \(counts)")
                    return counts.allSatisfy { $0 == 1 }
                }

                let steps = 12
                let events = try Events.interleavedRides(activities, steps: steps)
                let publisher = EventPublisher(connection: control, source: "//tests.liveline", topology: topology)
                try await publisher.publish(contentsOf: Array(events.prefix(events.count / 2)))
                // One worker leaves mid-stream: it drains and hands its shards to the others.
                await workers[0].stop()
                try await publisher.publish(contentsOf: Array(events.suffix(from: events.count / 2)))
                try await eventually("the three left hold all 8") {
                    let left = held().dropFirst()
                    return left.reduce(0, +) == 8 && left.allSatisfy { (2...3).contains($0) }
                }
                try await eventually("every event taken") {
                    var left = 0
                    for queue in topology.translateQueues { left += try await control.messageCount(queue: queue) }
                    return left == 0 && workers.map { $0.total("liveline_translator_events_received_total") }.reduce(0, +) >= Int64(events.count)
                }

                // Per send shard, in queue order: each activity in one shard, its sequences
                // rising, its newest state there, and no job twice.
                var shardOf: [String: Int] = [:]
                var last: [String: Int64] = [:]
                var ids = Set<String>()
                for (shard, job) in try await takeJobs(topology, on: control) {
                    #expect(ids.insert(job.jobId).inserted, "job \(job.jobId) twice")
                    #expect(shardOf[job.activityId, default: shard] == shard, "\(job.activityId) in two send shards")
                    #expect(job.sequence > last[job.activityId, default: 0], "\(job.activityId) out of order")
                    shardOf[job.activityId] = shard
                    last[job.activityId] = job.sequence
                }
                #expect(Set(shardOf.keys) == Set(activities))
                #expect(activities.allSatisfy { last[$0] == Events.newestSequence(steps: steps) })
                #expect(Set(shardOf.values).count > 1, "activities spread over the send shards")

                for worker in workers.dropFirst() { await worker.stop() }
                for queue in topology.amqp.queues { try? await control.delete(queue: queue.name) }
                for exchange in topology.amqp.exchanges { try? await control.delete(exchange: exchange.name) }
                await control.close()
            }
        }
    }

    /// Resharding the translate stage from 2 to 4 while events flow: the old count's workers
    /// drain the old shards, the new count's wait for them, and every activity's jobs come out
    /// once each, in order, ending on its newest state.
    @Test(arguments: StoreKind.underTest)
    func reshardingUnderLoadLosesNothingAndKeepsOrder(store kind: StoreKind) async throws {
        try await withBroker {
            try await kind.withStore { store in
                let prefix = Broker.unique("reshard")
                let before = LivelineTopology(prefix: prefix, retryTiers: [], translateShards: 2, sendShards: 2)
                let after = LivelineTopology(prefix: prefix, retryTiers: [], translateShards: 4, sendShards: 2)
                let control = try await Broker.connect(name: "reshard-control")
                try await control.declare(before.amqp)
                let activities = (0..<16).map { "rs-\($0)" }
                try await registerDevices(activities, in: store)
                let old = try await (0..<2).asyncMap { try await Worker.start($0, topology: before, store: store) }
                let steps = 15
                let events = try Events.interleavedRides(activities, steps: steps)
                let publisher = EventPublisher(connection: control, source: "//tests.liveline", topology: before)
                let third = events.count / 3
                try await publisher.publish(contentsOf: Array(events[..<third]))

                var resharding = Resharding(topology: before, stage: .translate, to: 4)
                resharding.quiet = .seconds(1)
                resharding.interval = .milliseconds(100)
                let reshard = Task { [resharding] in
                    let connection = try await Broker.connect(name: "reshard-tool")
                    defer { Task { await connection.close() } }
                    return try await resharding.run(on: connection)
                }
                // The new count's workers start once the new shards exist, as an operator's
                // would after `liveline reshard` began: a worker refuses a broker that has no
                // layout for its count. The rest goes out then too, so some of it lands in them.
                try await eventually("the new shards declared") {
                    (try? await control.messageCount(queue: after.translateQueues[3])) != nil
                }
                let new = try await (2..<4).asyncMap { try await Worker.start($0, topology: after, store: store) }
                for chunk in stride(from: third, to: events.count, by: 20) {
                    try await publisher.publish(contentsOf: Array(events[chunk..<min(events.count, chunk + 20)]))
                    try await Task.sleep(for: .milliseconds(30))
                }
                let summary = try await reshard.value
                #expect(summary.stage == before.translate.name && summary.from == 2 && summary.to == 4)
                #expect(summary.deleted == before.translateQueues)
                for worker in old { await worker.stop() }
                let received = { (workers: [Worker]) in workers.map { $0.total("liveline_translator_events_received_total") }.reduce(0, +) }
                // Received counts an event once its jobs are confirmed; a copy taken by both
                // counts (published while both layouts were bound) is counted twice.
                try await eventually("the new shards held and every event translated") {
                    var left = 0
                    for queue in after.translateQueues { left += try await control.messageCount(queue: queue) }
                    return left == 0 && new.map { $0.held(after) }.reduce(0, +) == 4
                        && received(old) + received(new) >= Int64(events.count)
                }
                // Both counts did part of the work: the reshard happened under load.
                #expect(received(old) > 0 && received(new) > 0, "old \(received(old)), new \(received(new))")
                for queue in before.translateQueues {
                    await #expect(throws: AMQPError.self, "\(queue) deleted") { _ = try await control.messageCount(queue: queue) }
                }

                // Empty queues do not mean every batch is confirmed: a copy counted twice can
                // make up for one still in flight, so the jobs are read until the newest are in.
                var last: [String: Int64] = [:]
                var ids = Set<String>()
                try await eventually("every newest state sent") {
                    for (_, job) in try await takeJobs(after, on: control) {
                        #expect(ids.insert(job.jobId).inserted, "job \(job.jobId) twice")
                        #expect(job.sequence > last[job.activityId, default: 0], "\(job.activityId) out of order")
                        last[job.activityId] = job.sequence
                    }
                    return activities.allSatisfy { last[$0] == Events.newestSequence(steps: steps) }
                }

                for worker in new { await worker.stop() }
                for queue in after.amqp.queues { try? await control.delete(queue: queue.name) }
                for exchange in after.amqp.exchanges { try? await control.delete(exchange: exchange.name) }
                await control.close()
            }
        }
    }

    /// The old shards are deleted once empty, but their workers may still hold a backlog
    /// they received: the reshard ends (and its marker, which the new count's workers wait
    /// for, goes) only once every old shard's lease is let go, which a worker does after it
    /// published the last of it.
    @Test func aReshardEndsOnlyOnceTheOldWorkersLetGoOfTheirShards() async throws {
        try await withBroker {
            let prefix = Broker.unique("reshard-lease")
            let before = LivelineTopology(prefix: prefix, retryTiers: [], translateShards: 2, sendShards: 1)
            let after = LivelineTopology(prefix: prefix, retryTiers: [], translateShards: 4, sendShards: 1)
            let control = try await Broker.connect(name: "reshard-lease-control")
            try await control.declare(before.amqp)
            let worker = try await Broker.connect(name: "reshard-lease-worker")
            #expect(try await worker.claim(exclusiveQueue: before.translate.lease(1)))
            var resharding = Resharding(topology: before, stage: .translate, to: 4)
            resharding.quiet = .milliseconds(200)
            resharding.interval = .milliseconds(100)
            let held = Mutex(0)
            let failure = Mutex<String?>(nil)
            let reshard = Task { [resharding] in
                do {
                    return try await resharding.run(on: control) { progress in held.withLock { $0 = max($0, progress.leasesHeld) } }
                } catch {
                    failure.withLock { $0 = "\(error)" }
                    throw error
                }
            }
            // Quorum queues are declared and deleted through their Raft logs, which take their
            // time on a CI machine busy with every other suite.
            try await eventually(timeout: .seconds(60), "the old shards deleted while a lease is held") {
                if let failure = failure.withLock({ $0 }) {
                    Issue.record("the reshard failed: \(failure)")
                    throw CancellationError()
                }
                let gone = try await !LivelineTopology.exists(queue: before.translateQueues[0], on: control)
                return gone && held.withLock { $0 } == 1
            }
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await LivelineTopology.exists(queue: before.translate.reshardingMarker, on: control), "not over yet")
            try await worker.delete(queue: before.translate.lease(1))
            let summary = try await reshard.value
            #expect(summary.deleted == before.translateQueues)
            #expect(try await !LivelineTopology.exists(queue: before.translate.reshardingMarker, on: control))
            await worker.close()
            for queue in after.amqp.queues { try? await control.delete(queue: queue.name) }
            for exchange in after.amqp.exchanges { try? await control.delete(exchange: exchange.name) }
            await control.close()
        }
    }

    /// A worker refuses a broker laid out for another shard count, before it declares or
    /// consumes anything, in one line that names the setting and both counts.
    @Test func aBrokerWithAnotherShardCountIsRefusedAtStart() async throws {
        try await withBroker {
            let prefix = Broker.unique("shard-mismatch")
            let control = try await Broker.connect(name: "shard-mismatch")
            let onBroker = LivelineTopology(prefix: prefix, retryTiers: [], sendShards: 4)
            try await control.declare(onBroker.amqp)
            try await onBroker.checkShardCounts(on: control)
            let configured = LivelineTopology(prefix: prefix, retryTiers: [], sendShards: 8)
            await #expect {
                try await configured.checkShardCounts(on: control)
            } throws: { error in
                let text = "\(error)"
                return text.contains("liveline.send.shards is 8") && text.contains("has 4 shard(s)") && !text.contains("\n")
            }
            #expect(try await control.consumerCount(queue: onBroker.sendQueues[0]) == 0)
            await #expect(throws: AMQPError.self) { _ = try await control.messageCount(queue: configured.sendQueues[0]) }
            for queue in onBroker.amqp.queues { try? await control.delete(queue: queue.name) }
            for exchange in onBroker.amqp.exchanges { try? await control.delete(exchange: exchange.name) }
            await control.close()
        }
    }
}

/// One ride device per activity, with its update token.
private func registerDevices(_ activities: [String], in store: any ActivityStore) async throws {
    for (index, activity) in activities.enumerated() {
        _ = try await store.registerUpdateToken(UpdateTokenRegistration(
            activityID: activity, deviceID: "d-1", userID: "u-1", token: String(format: "%064x", index + 1),
            domain: "ride", attributesType: "RideAttributes", at: Date()))
    }
}

/// Takes every message waiting in the send shards and returns their jobs with their shard,
/// each shard's in queue order (a bundle's in its order).
private func takeJobs(_ topology: LivelineTopology, on control: AMQPConnection) async throws -> [(shard: Int, job: PushJob)] {
    var jobs: [(shard: Int, job: PushJob)] = []
    for (shard, queue) in topology.sendQueues.enumerated() {
        let count = try await control.messageCount(queue: queue)
        guard count > 0 else { continue }
        let consumer = try await control.consume(queue: queue, prefetch: UInt16(min(count, 1_000)))
        for delivery in try await receive(count, from: consumer) {
            let lines = delivery.properties.contentType == PushJobBundle.contentType
                ? PushJobBundle.lines(of: delivery.body) : [delivery.body]
            jobs += try lines.map { (shard, try PushJob(json: $0)) }
            delivery.ack()
        }
        await consumer.close()
    }
    return jobs
}

/// One translator with its own connections, counters and service group.
private struct Worker: Sendable {
    let metrics: TestMetrics
    let group: ServiceGroup
    let run: Task<Void, any Error>
    let connections: [AMQPConnection]

    static func start(_ index: Int, topology: LivelineTopology, store: any ActivityStore) async throws -> Worker {
        let consumer = try await Broker.connect(name: "sharded-\(index)-consume")
        let publisher = try await Broker.connect(name: "sharded-\(index)-publish")
        let metrics = TestMetrics()
        let service = TranslatorService(
            consumer: consumer, publisher: publisher, store: store, translator: TranslatorHarness.translator,
            topology: topology, settings: TranslatorSettings(balanceInterval: .milliseconds(200)), logger: Broker.logger,
            metricsFactory: metrics)
        let group = ServiceGroup(configuration: .init(services: [.init(service: service)], logger: Broker.logger))
        return Worker(metrics: metrics, group: group, run: Task { try await group.run() }, connections: [consumer, publisher])
    }

    func held(_ topology: LivelineTopology) -> Int {
        Int((try? metrics.expectGauge("liveline_shards_held", [("stage", topology.translate.name)]).lastValue) ?? 0)
    }

    func total(_ label: String) -> Int64 { metrics.total(label) }

    /// Graceful shutdown: it drains, acks and lets its shards go, then its connections close.
    func stop() async {
        await group.triggerGracefulShutdown()
        _ = await run.result
        for connection in connections { await connection.close() }
    }
}

extension Sequence where Element: Sendable {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
