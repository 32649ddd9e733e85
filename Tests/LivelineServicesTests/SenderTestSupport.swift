import APNsSimulator
import Crypto
import Foundation
import LivelineAMQP
import LivelineAPNs
import LivelineCore
import LivelineMessaging
import LivelineServices
import LivelineStore
import LivelineStoreTestSupport
import Logging
import ServiceLifecycle
import LivelineTestSupport
import MetricsTestKit
import Testing

/// The RabbitMQ that `scripts/test` (of /work/main) started on loopback.
enum SenderBroker {
    static func connect(_ name: String) async throws -> AMQPConnection {
        try await Broker.connect(name: "sender-\(name)")
    }

    static var logger: Logger { Broker.logger }
}

/// A signing key made for these tests only (not a secret: it signs nothing real).
enum SenderTestKey {
    static let teamID = "TEAMSENDER"
    static let keyID = "KEYSENDER1"
    /// Made once per test run: nothing signed with it is real, and no key sits in the repo.
    static let key = P256.Signing.PrivateKey()
    static var privateKeyPEM: String { key.pemRepresentation }
    static var publicKeyPEM: String { key.publicKey.pemRepresentation }
    static var trusted: APNsSimulatorConfiguration.TrustedKey {
        .init(keyID: keyID, teamID: teamID, publicKeyPEM: publicKeyPEM)
    }
}

/// A topology of its own per test, with short retry tiers so retries finish in seconds.
func uniqueSenderTopology(tiers: [LivelineTopology.RetryTier]) -> LivelineTopology {
    LivelineTopology(prefix: "test.sender.\(UUID().uuidString.prefix(8).lowercased())", retryTiers: tiers)
}

/// A device token as iOS hands it out: 32 random bytes as hex.
func randomDeviceToken() -> String {
    (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
}

/// A realistic ~300-byte ride update payload.
func ridePayload(eta: Int = 300) -> Data {
    let now = Int(Date().timeIntervalSince1970)
    return Data(
        #"{"aps":{"timestamp":\#(now),"event":"update","content-state":{"driverName":"Ana","driverPhoto":"ana.jpg","vehicleDescription":"Blue Civic KX-42","etaStartSeconds":\#(eta),"etaEndSeconds":\#(eta + 120),"status":"enRoute","distanceRemaining":1840},"stale-date":\#(now + 900),"relevance-score":50}}"#
            .utf8
    )
}

/// A push job as the translator would emit it.
func makeJob(
    target: PushTarget,
    bundleID: String = "com.example.rides",
    activityID: String = "r-\(UUID().uuidString.prefix(6))",
    event: PushEvent = .update,
    priority: PushPriority = .high,
    expiration: Int64? = Int64(Date().timeIntervalSince1970) + 900,
    payload: Data = ridePayload(),
    sequence: Int64? = nil,
    isTerminal: Bool = false,
    alerts: Bool = false
) -> PushJob {
    let eventTime = EventTime(Date())
    let eventID = UUID().uuidString
    let jobID = JobIdentity.jobId(eventId: eventID, target: target)
    return PushJob(
        jobId: jobID, apnsId: JobIdentity.apnsId(jobId: jobID), activityId: activityID, domain: "ride",
        eventId: eventID, eventTime: eventTime, userId: "u-1", attributesType: "RideAttributes", target: target,
        bundleId: bundleID, priority: priority, expiration: expiration, event: event, payload: payload,
        isTerminal: isTerminal, sequence: sequence ?? eventTime.millisecondsSince1970, alerts: alerts
    )
}

/// Everything a sender test needs, all real: broker, SQLite or PostgreSQL store, simulator
/// over HTTP/2 + TLS.
struct SenderHarness {
    let topology: LivelineTopology
    let simulator: APNsSimulator
    let clients: [String: APNsClient]
    let store: any SenderStore
    /// The test's own connection: publishes jobs and reads the DLQ.
    let connection: AMQPConnection
    /// What the sender recorded, read with `total(_:_:)`.
    let metrics: TestMetrics

    func client(_ bundleID: String = "com.example.rides") -> APNsClient {
        clients[bundleID]!
    }

    /// Publishes jobs to the push exchange as the translator does.
    func publish(_ jobs: [PushJob], headers: AMQPTable = [:]) async throws {
        try await connection.publish(
            contentsOf: jobs.map { job in
                AMQPMessage(
                    exchange: topology.pushExchange, routingKey: topology.sendRoutingKey(shard: 0),
                    body: job.encoded(),
                    properties: AMQPProperties(
                        contentType: "application/json",
                        headers: headers.merging([
                            TranslatorHeaders.activity: .string(job.activityId),
                            TranslatorHeaders.lane: .string(job.target.laneKey(activity: job.activityId)),
                        ]) { given, _ in given },
                        messageID: job.jobId)
                )
            }
        )
    }

    /// Publishes raw bytes to the push exchange.
    func publish(raw body: Data) async throws {
        try await connection.publish(
            AMQPMessage(exchange: topology.pushExchange, routingKey: topology.sendRoutingKey(shard: 0), body: body)
        )
    }

    /// Reads `count` dead letters (acking them), failing after `timeout`.
    func deadLetters(_ count: Int, timeout: Duration = .seconds(20)) async throws -> [(DeadLetter, AMQPTable)] {
        let consumer = try await connection.consume(queue: topology.deadQueue, prefetch: 100)
        defer { Task { await consumer.close() } }
        let deliveries = try await withThrowingTaskGroup(of: [AMQPDelivery]?.self) { group in
            group.addTask {
                var received: [AMQPDelivery] = []
                for try await delivery in consumer {
                    received.append(delivery)
                    delivery.ack()
                    if received.count == count { break }
                }
                return received
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let deliveries else {
            Issue.record("timed out waiting for \(count) dead letters")
            throw CancellationError()
        }
        return try deliveries.map { (try JSONDecoder().decode(DeadLetter.self, from: $0.body), $0.properties.headers) }
    }

    func messageCount(_ queue: String) async throws -> Int {
        try await connection.messageCount(queue: queue)
    }

    /// Registers `token` as the update token of `activityID`.
    func register(_ token: String, activityID: String, deviceID: String = "phone", at: Date = Date()) async throws {
        _ = try await store.registerUpdateToken(
            UpdateTokenRegistration(
                activityID: activityID, deviceID: deviceID, userID: "u-1", token: token,
                domain: "ride", attributesType: "RideAttributes", at: at
            )
        )
    }

    /// The update tokens the store holds for `activityID`.
    func tokens(of activityID: String) async throws -> [String] {
        let snapshots = try await store.loadSnapshots([
            SnapshotRequest(activityID: activityID, userID: "u-1", attributesType: "RideAttributes")
        ])
        return snapshots[activityID]?.updateTokens.map(\.token) ?? []
    }
}

/// The send queue's ready count around the close of the sender's connections.
struct SenderShutdownReport {
    var readyBeforeClose: Int
    var readyAfterClose: Int
    /// Deliveries the sender held but never acked (requeued by the close).
    var unacked: Int { readyAfterClose - readyBeforeClose }
}

/// Runs `body` with a sender in a real `ServiceGroup`, then shuts it down gracefully and
/// checks that it left nothing unacked.
func withSender<T: Sendable>(
    bundleIDs: [String] = ["com.example.rides"],
    tiers: [LivelineTopology.RetryTier] = [.init(name: "1s", delay: .seconds(1)), .init(name: "1s-again", delay: .seconds(1))],
    simulator simulatorConfiguration: APNsSimulatorConfiguration = .init(),
    clock: any WallClock = SystemWallClock(),
    store kind: StoreKind = .sqlite,
    settings configure: (inout SenderSettings) -> Void = { _ in },
    afterShutdown: (SenderHarness, SenderShutdownReport) async throws -> Void = { _, _ in },
    _ body: (SenderHarness) async throws -> T
) async throws -> T {
    // Shares the broker with other tests, but never while one restarts or freezes it.
    try await withBroker {
        try await kind.withStore { store in
            try await runSender(
                bundleIDs: bundleIDs, tiers: tiers, simulator: simulatorConfiguration, clock: clock, store: store,
                settings: configure, afterShutdown: afterShutdown, body)
        }
    }
}

private func runSender<T: Sendable>(
    bundleIDs: [String],
    tiers: [LivelineTopology.RetryTier],
    simulator simulatorConfiguration: APNsSimulatorConfiguration,
    clock: any WallClock,
    store: any ActivityStore,
    settings configure: (inout SenderSettings) -> Void,
    afterShutdown: (SenderHarness, SenderShutdownReport) async throws -> Void,
    _ body: (SenderHarness) async throws -> T
) async throws -> T {
    let topology = uniqueSenderTopology(tiers: tiers)
    var simulatorConfiguration = simulatorConfiguration
    simulatorConfiguration.trustedKeys.append(SenderTestKey.trusted)
    let simulator = try APNsSimulator(configuration: simulatorConfiguration)
    let port = try await simulator.start()
    let endpoint = APNsEndpoint(host: "127.0.0.1", port: port, trust: .pem(simulator.certificatePEM))
    var clients: [String: APNsClient] = [:]
    for bundleID in bundleIDs {
        clients[bundleID] = try APNsClient(
            configuration: APNsClientConfiguration(
                bundleID: bundleID, teamID: SenderTestKey.teamID, keyID: SenderTestKey.keyID,
                privateKeyPEM: SenderTestKey.privateKeyPEM, endpoint: endpoint,
                pool: .init(maximumConnections: 2, requestTimeout: .seconds(5))
            ),
            clock: clock,
            logger: SenderBroker.logger
        )
    }

    let connection = try await SenderBroker.connect("test")
    let consuming = try await SenderBroker.connect("consume")
    let publishing = try await SenderBroker.connect("publish")
    try await connection.declare(topology.amqp)

    var settings = SenderSettings(topology: topology, throttleBackoff: .seconds(1), maximumThrottleBackoff: .seconds(2))
    configure(&settings)
    let metrics = TestMetrics()
    let sender = SenderService(
        consuming: consuming, publishing: publishing, clients: APNsClientDirectory(Array(clients.values)),
        store: store, settings: settings, logger: SenderBroker.logger, metricsFactory: metrics
    )
    let group = ServiceGroup(
        configuration: .init(services: [.init(service: sender)], logger: SenderBroker.logger)
    )
    let harness = SenderHarness(
        topology: topology, simulator: simulator, clients: clients, store: store, connection: connection, metrics: metrics)

    func tearDown() async {
        await consuming.close()
        await publishing.close()
        for client in clients.values { await client.shutdown() }
        try? await simulator.stop()
        // Every queue and exchange the topology declares: each quorum queue left behind keeps
        // files open on the broker.
        for queue in topology.amqp.queues { try? await connection.delete(queue: queue.name) }
        for exchange in topology.amqp.exchanges { try? await connection.delete(exchange: exchange.name) }
        await connection.close()
    }

    do {
        let result = try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            do {
                let result = try await body(harness)
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
                // Closing the sender's connections requeues whatever it left unacked, so the
                // ready count before and after the close tells whether anything was. Acks are
                // asynchronous (and quorum queues settle them through Raft), so give the last
                // ones a moment to land before counting; on a loaded machine they can trail.
                try await Task.sleep(for: .milliseconds(500))
                let readyBeforeClose = try await harness.messageCount(topology.sendQueues[0])
                await consuming.close()
                await publishing.close()
                let readyAfterClose = try await harness.messageCount(topology.sendQueues[0])
                try await afterShutdown(
                    harness, SenderShutdownReport(readyBeforeClose: readyBeforeClose, readyAfterClose: readyAfterClose)
                )
                return result
            } catch {
                await group.triggerGracefulShutdown()
                try? await tasks.waitForAll()
                throw error
            }
        }
        await tearDown()
        return result
    } catch {
        await tearDown()
        throw error
    }
}
