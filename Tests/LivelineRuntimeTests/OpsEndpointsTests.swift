import AsyncHTTPClient
import Foundation
import GRDB
import Hummingbird
import LivelineAMQP
import LivelineCore
import LivelineMessaging
import LivelineProducer
import LivelineModels
import LivelineRuntime
import LivelineServices
import LivelineStore
import LivelineTestSupport
import Logging
import Metrics
import NIOCore
import Prometheus
import ServiceLifecycle
import Synchronization
import Testing

/// The ops port of a real translator: /healthz follows a loop blocked on its store, /readyz
/// follows the broker, /metrics serves what the translator counted.
@Suite(.timeLimit(.minutes(2)))
struct OpsEndpointsTests {
    /// One GET with a hard deadline, so a test can fail but never hang.
    static func get(_ port: Int, _ path: String) async throws -> (status: Int, body: String) {
        let response = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)"), timeout: .seconds(5))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), String(buffer: body))
    }

    /// A translator on its own topology with a SQLite store, its ops server on a free port.
    ///
    /// - Parameter deletesTopology: false leaves the queues and exchanges in the broker.
    static func withTranslator(
        stallAfter: Duration, deletesTopology: Bool = true,
        _ body: (_ port: Int, _ path: String, _ connection: AMQPConnection, _ topology: LivelineTopology) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ops-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("ops.sqlite").path
        let store = try SQLiteLivelineStore(configuration: .init(path: path, busyTimeout: 30))
        let topology = LivelineTopology(prefix: Broker.unique("ops"), retryTiers: [])
        let consumer = try await Broker.connect()
        let publisher = try await Broker.connect()
        try await publisher.declare(topology.amqp)
        let registry = PrometheusCollectorRegistry()
        let health = WorkLoopHealth(stallAfter: stallAfter)
        let service = TranslatorService(
            consumer: consumer, publisher: publisher, store: store,
            translator: Translator(configuration: .standard(bundleId: "com.example.liveline")), topology: topology,
            logger: Broker.logger, metricsFactory: PrometheusMetricsFactory(registry: registry), health: health)
        let port = Mutex(0)
        let gauges = TransportGauges(
            registry: registry, health: health, brokers: [("translator-in", consumer), ("translator-out", publisher)])
        let ops = OpsEndpoints(registry: registry, health: health, gauges: gauges) {
            [.broker("broker-consume", consumer), .broker("broker-publish", publisher), await .store(store)]
        }.application(host: "127.0.0.1", port: 0, logger: Broker.logger) { channel in
            port.withLock { $0 = channel.localAddress?.port ?? 0 }
        }
        let group = ServiceGroup(configuration: .init(services: [.init(service: service), .init(service: ops)], logger: Broker.logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            try await eventually("the ops server listens") { port.withLock { $0 } != 0 }
            do {
                try await body(port.withLock { $0 }, path, publisher, topology)
            } catch {
                await group.triggerGracefulShutdown()
                throw error
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        if deletesTopology {
            for queue in topology.amqp.queues { try? await publisher.delete(queue: queue.name) }
            for exchange in topology.amqp.exchanges { try? await publisher.delete(exchange: exchange.name) }
        }
        await consumer.close()
        await publisher.close()
    }

    static func rideEvent(_ activity: String) throws -> LivelineEvent {
        try .ride(
            activityId: activity, userId: "u-1",
            state: .init(driverName: "Maria", driverPhoto: "car", vehicleDescription: "Camry", etaStartSeconds: 60,
                         etaEndSeconds: 120, status: .driverAssigned, distanceRemaining: 1))
    }

    @Test func healthzTurns503WhileTheLoopIsBlockedAndBackAfterAndMetricsShowTheWork() async throws {
        try await withBroker {
            try await Self.withTranslator(stallAfter: .seconds(1)) { port, path, connection, topology in
                #expect(try await Self.get(port, "/healthz").status == 200, "idle with nothing to do is healthy")
                #expect(try await Self.get(port, "/readyz").status == 200)

                // Another process holds the database's write lock: the translator's batch waits on it.
                let blocker = try DatabaseQueue(path: path)
                let lock = LockHolder()
                let holding = Task.detached {
                    // One access holds the lock throughout: GRDB refuses a transaction left open.
                    try blocker.writeWithoutTransaction { db in
                        try db.execute(sql: "BEGIN EXCLUSIVE")
                        lock.held.withLock { $0 = true }
                        while !lock.release.withLock({ $0 }) { usleep(20_000) }
                        try db.execute(sql: "ROLLBACK")
                    }
                }
                try await eventually("the lock is held") { lock.held.withLock { $0 } }
                let publisher = EventPublisher(connection: connection, source: "//tests", topology: topology)
                try await publisher.publish(try Self.rideEvent("r-ops-1"))
                try await eventually(timeout: .seconds(20), "healthz reports the stuck loop") {
                    (try? await Self.get(port, "/healthz"))?.status == 503
                }
                let stuck = try await Self.get(port, "/healthz")
                #expect(stuck.body.contains(#""status":"stuck""#) && stuck.body.contains(#""inFlight":1"#))

                lock.release.withLock { $0 = true }
                try await holding.value
                try await eventually(timeout: .seconds(20), "healthz recovers") {
                    (try? await Self.get(port, "/healthz"))?.status == 200
                }
                let metrics = try await Self.get(port, "/metrics")
                #expect(metrics.status == 200)
                for name in [
                    "liveline_translator_events_received_total 1",
                    #"liveline_translator_events_dropped_total{reason="noTarget"} 1"#,
                    "liveline_translator_jobs_published_total 0",
                    "liveline_translator_downgrades_total 0",
                    "liveline_translator_queue_wait_seconds_count 1",
                    "liveline_translator_batch_duration_seconds_count",
                    #"liveline_translator_phase_duration_seconds_count{phase="translate"}"#,
                    "liveline_work_in_flight 0",
                    #"liveline_amqp_reconnects_total{connection="translator-in"} 0"#,
                ] {
                    #expect(metrics.body.contains(name), "/metrics lacks \(name)")
                }
            }
        }
    }

    @Test func readyzFollowsTheBrokerGoingDownAndComingBack() async throws {
        try await withBroker(exclusive: true) {
            // The queues stay: deleting quorum queues the restart just recovered races their
            // dead-letter workers' start, and on RabbitMQ 3.10 two such crashes within 5 s stop
            // the broker's dead-letter supervisor, after which every quorum queue declared with
            // at-least-once dead-lettering fails (INTERNAL_ERROR) until the broker restarts.
            try await Self.withTranslator(stallAfter: .seconds(60), deletesTopology: false) { port, _, _, _ in
                #expect(try await Self.get(port, "/readyz").status == 200)
                try await Broker.control("stop")
                do {
                    try await eventually(timeout: .seconds(20), "not ready without the broker") {
                        (try? await Self.get(port, "/readyz"))?.status == 503
                    }
                    let down = try await Self.get(port, "/readyz")
                    #expect(down.body.contains("connecting"), "\(down.body)")
                    #expect(down.body.contains("answers"), "the store is still ready: \(down.body)")
                } catch {
                    try? await Broker.control("start")  // the tests after this one need it
                    throw error
                }
                try await Broker.control("start")
                try await eventually(timeout: .seconds(60), "ready again") {
                    (try? await Self.get(port, "/readyz"))?.status == 200
                }
                let metrics = try await Self.get(port, "/metrics").body
                #expect(metrics.contains(#"liveline_amqp_reconnects_total{connection="translator-in"} 1"#), "\(metrics)")
            }
        }
    }
}

/// Flags between the test and the task that holds the database's write lock.
final class LockHolder: Sendable {
    let held = Mutex(false)
    let release = Mutex(false)
}
