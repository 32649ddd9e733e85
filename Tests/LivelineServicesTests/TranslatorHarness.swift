import Foundation
import LivelineAMQP
import LivelineCore
import LivelineMessaging
import LivelineProducer
import LivelineServices
import LivelineStore
import LivelineStoreTestSupport
import Logging
import MetricsTestKit
import PostgresNIO
import ServiceLifecycle
import LivelineTestSupport
import Testing

/// A real broker, a real SQLite store in a temp directory and a `TranslatorService` in a
/// `ServiceGroup`, with a topology of its own so tests never see each other's messages.
struct TranslatorHarness {
    static let bundleId = "com.example.liveline"
    static let translator: Translator = {
        var configuration = TranslatorConfiguration.standard(bundleId: bundleId)
        configuration.domains.append(Events.flight)
        configuration.domains.append(Events.alarm)
        return Translator(configuration: configuration)
    }()

    let topology: LivelineTopology
    /// Whether it made the topology (and so deletes it at the end), or was handed a sender's.
    private let ownsTopology: Bool
    let store: any ActivityStore
    let control: AMQPConnection
    let publisher: EventPublisher
    /// The service's counters.
    let metrics = TestMetrics()
    private let serviceConsumer: AMQPConnection
    private let servicePublisher: AMQPConnection

    /// Builds everything, runs the service while `body` runs, then shuts it down gracefully
    /// and removes the topology and the database.
    ///
    /// `afterShutdown` runs once the service returned and its connections are closed
    /// (so anything it left unacked is back in the queue), before the topology goes.
    ///
    /// `channels` makes the service open shared activities' channels with these clients.
    static func run<T: Sendable>(
        store kind: StoreKind = .sqlite, name: String = #function, settings: TranslatorSettings = TranslatorSettings(),
        channels: APNsClientDirectory? = nil,
        _ body: (TranslatorHarness, ServiceGroup) async throws -> T,
        afterShutdown: (TranslatorHarness) async throws -> Void = { _ in }
    ) async throws -> T {
        try await kind.withStore { store in
            try await run(on: store, name: name, settings: settings, channels: channels, body, afterShutdown: afterShutdown)
        }
    }

    /// The same, on a store the test made; with `topology`, on that one (a sender's, so the
    /// jobs go on to it).
    static func run<T: Sendable>(
        on store: any ActivityStore, name: String = #function, topology: LivelineTopology? = nil,
        settings: TranslatorSettings = TranslatorSettings(), channels: APNsClientDirectory? = nil,
        outcomes: OutcomeDomains = .none, translator: Translator = Self.translator,
        _ body: (TranslatorHarness, ServiceGroup) async throws -> T,
        afterShutdown: (TranslatorHarness) async throws -> Void = { _ in }
    ) async throws -> T {
        // Shares the broker with other tests, but never while one restarts or freezes it.
        try await withBroker {
            let harness = try await TranslatorHarness(name: name, store: store, topology: topology)
            return try await harness.run(
                settings: settings, channels: channels, outcomes: outcomes, translator: translator, body, afterShutdown: afterShutdown)
        }
    }

    private func run<T: Sendable>(
        settings: TranslatorSettings, channels: APNsClientDirectory?, outcomes: OutcomeDomains, translator: Translator,
        _ body: (TranslatorHarness, ServiceGroup) async throws -> T,
        afterShutdown: (TranslatorHarness) async throws -> Void
    ) async throws -> T {
        let service = TranslatorService(
            consumer: serviceConsumer, publisher: servicePublisher, store: store,
            translator: translator, topology: topology, settings: settings, logger: Broker.logger,
            metricsFactory: metrics,
            channels: channels.map { ChannelOpener(store: store, clients: $0, keys: translator.configuration.keys, logger: Broker.logger) },
            outcomes: outcomes)
        let group = ServiceGroup(configuration: .init(services: [.init(service: service)], logger: Broker.logger))
        do {
            let failure = BackgroundFailure()
            let result = try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await failure.recording { try await group.run() } }
                // The service declares the topology as it starts: a body that then deletes a
                // queue of it would race that declaration without this wait.
                try await eventually("the translator consuming", unless: failure) {
                    (try? await control.consumerCount(queue: topology.translateQueues[0])) ?? 0 > 0
                }
                let result = try await body(self, group)
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
                return result
            }
            // A quorum queue applies acks through its Raft log; a channel closed right after
            // its last ack can race the broker into requeueing messages whose ack is still in
            // flight (harmless in production: redelivery is idempotent), which would make the
            // exact counts below flaky. Give the broker a moment before closing.
            try await Task.sleep(for: .milliseconds(300))
            await closeServiceConnections()
            try await afterShutdown(self)
            await tearDown()
            return result
        } catch {
            await group.triggerGracefulShutdown()
            await tearDown()
            throw error
        }
    }

    private init(name: String, store: any ActivityStore, topology: LivelineTopology?) async throws {
        self.store = store
        ownsTopology = topology == nil
        let topology = topology ?? LivelineTopology(prefix: Broker.unique(String(name.prefix(while: { $0 != "(" }))), retryTiers: [])
        self.topology = topology


        control = try await Broker.connect(name: "\(name)-control")
        try await control.declare(topology.amqp)
        publisher = EventPublisher(connection: control, source: "//tests.liveline", topology: topology)
        serviceConsumer = try await Broker.connect(name: "\(name)-consume")
        servicePublisher = try await Broker.connect(name: "\(name)-publish")
    }

    private func closeServiceConnections() async {
        await serviceConsumer.close()
        await servicePublisher.close()
    }

    private func tearDown() async {
        await closeServiceConnections()
        // Every queue and exchange the topology declares: each quorum queue left behind keeps
        // files open on the broker.
        if ownsTopology {
            for queue in topology.amqp.queues { try? await control.delete(queue: queue.name) }
            for exchange in topology.amqp.exchanges { try? await control.delete(exchange: exchange.name) }
        }
        await control.close()
    }

    /// Publishes raw bytes to the events exchange, as a non-Swift producer would.
    func publishRaw(_ body: Data, routingKey: String, id: String = UUID().uuidString) async throws {
        try await control.publish(AMQPMessage(
            exchange: topology.eventsExchange, routingKey: routingKey, body: body,
            properties: AMQPProperties(contentType: EventPublisher.contentType, messageID: id)))
    }

    /// Registers an update token the way the api does.
    func registerUpdateToken(
        _ token: String, activity: String, user: String, domain: String = "ride", device: String = "device-1"
    ) async throws {
        let attributesType = Self.translator.domain(named: domain)?.attributesType
        _ = try await store.registerUpdateToken(UpdateTokenRegistration(
            activityID: activity, deviceID: device, userID: user, token: token,
            domain: domain, attributesType: attributesType, at: Date()))
    }

    /// Takes `count` messages from the send queue, acking them, and returns the push jobs
    /// they carry (a ``PushJobBundle`` carries several).
    /// Takes every message waiting in the send shard queues and returns the jobs they carry:
    /// a message holds one job or a bundle of a batch's jobs for its shard.
    func takeQueuedJobs() async throws -> [PushJob] {
        var jobs: [PushJob] = []
        for queue in topology.sendQueues {
            let count = try await control.messageCount(queue: queue)
            guard count > 0 else { continue }
            let consumer = try await control.consume(queue: queue, prefetch: UInt16(min(count, 1_000)))
            jobs += try await self.jobs(count, consumer: consumer).map(\.job)
            await consumer.close()
        }
        return jobs
    }

    func jobs(_ count: Int, consumer: AMQPConsumer) async throws -> [(job: PushJob, delivery: AMQPDelivery)] {
        try await receive(count, from: consumer).flatMap { delivery in
            delivery.ack()
            let isBundle = delivery.properties.contentType == PushJobBundle.contentType
            return try (isBundle ? PushJobBundle.lines(of: delivery.body) : [delivery.body]).map { (try PushJob(json: $0), delivery) }
        }
    }
}

extension TestMetrics {
    /// The total of the counters named `label` with these dimensions, 0 if never created.
    func total(_ label: String, _ dimensions: [(String, String)] = []) -> Int64 {
        counterTotal(label: label, dimensions: dimensions)
    }
}
