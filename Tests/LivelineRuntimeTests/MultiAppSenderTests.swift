import APNsSimulator
import Crypto
import Foundation
import LivelineAMQP
import LivelineAPNs
import LivelineCore
import LivelineMessaging
import LivelineRuntime
import LivelineServices
import LivelineStore
import LivelineTestSupport
import Prometheus
import ServiceLifecycle
import Synchronization
import Testing

/// A sender configured the way operators configure it (`liveline.apps`), with one
/// simulator playing APNs production and another playing the sandbox: each app signs with
/// its own key, and each push reaches the host of its token's environment, or for a
/// broadcast, of its app's. Its ops port then shows the work on `/metrics`.
@Suite(.timeLimit(.minutes(2)))
struct MultiAppSenderTests {
    @Test func twoAppsReachTheirOwnEnvironmentsWithTheirOwnKeys() async throws {
        let keys = try APNsSettingsTests.Keys()
        let keyA = try P256.Signing.PrivateKey(pemRepresentation: keys.pemA)
        let keyB = try P256.Signing.PrivateKey(pemRepresentation: keys.pemB)
        func trusted(_ key: P256.Signing.PrivateKey, _ id: String) -> APNsSimulatorConfiguration.TrustedKey {
            .init(keyID: id, teamID: "TEAM000001", publicKeyPEM: key.publicKey.pemRepresentation)
        }
        // Production knows both keys; the sandbox knows only scores' key B, so a push of
        // rides' there, or one signed with the wrong key, would be refused, not delivered.
        let production = try APNsSimulator(configuration: .init(trustedKeys: [trusted(keyA, "KEYAAAAAAA"), trusted(keyB, "KEYBBBBBBB")]))
        let sandbox = try APNsSimulator(configuration: .init(trustedKeys: [trusted(keyB, "KEYBBBBBBB")]))
        let productionPort = try await production.start()
        let sandboxPort = try await sandbox.start()
        let caFile = keys.directory.appendingPathComponent("ca.pem")
        try (production.certificatePEM + "\n" + sandbox.certificatePEM).write(to: caFile, atomically: true, encoding: .utf8)

        var environment = APNsSettingsTests.twoApps(keys)
        environment["LIVELINE_APNS_PRODUCTION_ENDPOINT"] = "127.0.0.1:\(productionPort)"
        environment["LIVELINE_APNS_SANDBOX_ENDPOINT"] = "127.0.0.1:\(sandboxPort)"
        environment["LIVELINE_APNS_CA_FILE"] = caFile.path
        let clients = try APNsSettings(config: try await LivelineSettings.reader(file: nil, environment: environment))
            .clients(logger: Broker.logger)

        let ridesProduction = Self.token(), scoresProduction = Self.token(), scoresSandbox = Self.token()
        let jobs = [
            Self.job(.device(token: ridesProduction, kind: .update), bundleID: "com.example.rides"),
            Self.job(.device(token: scoresProduction, kind: .update, environment: .production), bundleID: "com.example.scores"),
            Self.job(.device(token: scoresSandbox, kind: .update, environment: .sandbox), bundleID: "com.example.scores"),
            Self.job(.channel(key: "game-1"), bundleID: "com.example.scores"),
        ]

        try await withBroker {
            let store = try SQLiteLivelineStore(configuration: .init(path: keys.path("sender.sqlite")))
            let topology = LivelineTopology(prefix: Broker.unique("apps"), retryTiers: [])
            let connection = try await Broker.connect()
            let consuming = try await Broker.connect()
            try await connection.declare(topology.amqp)
            let registry = PrometheusCollectorRegistry()
            let health = WorkLoopHealth()
            let sender = SenderService(
                consuming: consuming, publishing: connection, clients: clients, store: store,
                settings: SenderSettings(topology: topology), logger: Broker.logger,
                metricsFactory: PrometheusMetricsFactory(registry: registry), health: health)
            let gauges = TransportGauges(
                registry: registry, health: health, brokers: [("sender-in", consuming)],
                apns: clients.namedClients.map { (String($0.name.dropFirst("apns ".count)), $0.client) })
            let port = Mutex(0)
            let ops = OpsEndpoints(registry: registry, health: health, gauges: gauges) { [] }
                .application(host: "127.0.0.1", port: 0, logger: Broker.logger) { channel in
                    port.withLock { $0 = channel.localAddress?.port ?? 0 }
                }
            let group = ServiceGroup(
                configuration: .init(services: [.init(service: sender), .init(service: ops)], logger: Broker.logger))
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                let publishedAt = AMQPFieldValue.int(EventTime(Date()).millisecondsSince1970)
                try await connection.publish(contentsOf: jobs.map {
                    AMQPMessage(exchange: topology.pushExchange, routingKey: topology.sendRoutingKey(shard: 0), body: $0.encoded(),
                                properties: AMQPProperties(
                                    contentType: "application/json", headers: [TranslatorHeaders.publishedAt: publishedAt],
                                    messageID: $0.jobId))
                })
                try await eventually("every push reached a simulator") {
                    production.deliveredDeviceCount + sandbox.deliveredDeviceCount == 3
                        && !sandbox.channelIDs(bundleID: "com.example.scores").isEmpty
                        && sandbox.channelIDs(bundleID: "com.example.scores").contains {
                            !sandbox.deliveries(toChannel: $0).isEmpty
                        }
                }
                try await eventually("the ops port listens") { port.withLock { $0 } != 0 }
                let metrics = try await OpsEndpointsTests.get(port.withLock { $0 }, "/metrics")
                for name in [
                    #"liveline_sender_pushes_total{outcome="delivered",reason=""} 4"#,
                    "liveline_sender_send_duration_seconds_count 4",
                    "liveline_e2e_latency_seconds_count 4",
                    "liveline_sender_queue_wait_seconds_count 4",
                    "liveline_work_in_flight 0",
                    #"liveline_amqp_reconnects_total{connection="sender-in"} 0"#,
                    #"liveline_apns_connections_open{client="com.example.rides production"} 1"#,
                    #"liveline_apns_connections_open{client="com.example.scores sandbox"} 1"#,
                    #"liveline_apns_connections_open{client="com.example.rides sandbox"} 0"#,
                    #"liveline_apns_goaways_total{client="com.example.scores production"} 0"#,
                    #"liveline_apns_connections_failed_total{client="com.example.scores sandbox"} 0"#,
                    #"liveline_apns_provider_tokens_total{key="KEYAAAAAAA"} 1"#,
                    #"liveline_apns_provider_tokens_total{key="KEYBBBBBBB"} 1"#,
                ] {
                    #expect(metrics.body.contains(name), "/metrics lacks \(name)")
                }
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
            }
            #expect(try await connection.messageCount(queue: topology.deadQueue) == 0, "nothing was refused")
            for queue in topology.amqp.queues { try? await connection.delete(queue: queue.name) }
            for exchange in topology.amqp.exchanges { try? await connection.delete(exchange: exchange.name) }
            await consuming.close()
            await connection.close()
        }
        await clients.shutdown()

        // Each token at its environment's host, under its app's topic, and nowhere else.
        #expect(production.deliveries(toDevice: ridesProduction).map(\.topic) == ["com.example.rides.push-type.liveactivity"])
        #expect(production.deliveries(toDevice: scoresProduction).map(\.topic) == ["com.example.scores.push-type.liveactivity"])
        #expect(sandbox.deliveries(toDevice: scoresSandbox).map(\.topic) == ["com.example.scores.push-type.liveactivity"])
        #expect(sandbox.deliveries(toDevice: ridesProduction).isEmpty && sandbox.deliveries(toDevice: scoresProduction).isEmpty)
        #expect(production.deliveries(toDevice: scoresSandbox).isEmpty)
        // scores' channels live in its environment, the sandbox.
        #expect(production.channelIDs(bundleID: "com.example.scores").isEmpty)
        #expect(production.statistics.responsesByStatus.keys.allSatisfy { $0 == 200 }, "\(production.statistics)")
        #expect(sandbox.statistics.responsesByStatus.keys.allSatisfy { $0 == 200 || $0 == 201 }, "\(sandbox.statistics)")
        try await production.stop()
        try await sandbox.stop()
    }

    static func token() -> String {
        (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    static func job(_ target: PushTarget, bundleID: String) -> PushJob {
        let eventTime = EventTime(Date())
        let eventID = UUID().uuidString
        let jobID = JobIdentity.jobId(eventId: eventID, target: target)
        let now = Int(Date().timeIntervalSince1970)
        return PushJob(
            jobId: jobID, apnsId: JobIdentity.apnsId(jobId: jobID), activityId: "game-1", domain: "score",
            eventId: eventID, eventTime: eventTime, userId: "u-1", attributesType: "ScoreAttributes", target: target,
            // A broadcast's expiration agrees with its channel, which stores nothing: 0.
            bundleId: bundleID, priority: .low, expiration: target == .channel(key: "game-1") ? 0 : Int64(now + 900), event: .update,
            payload: Data(#"{"aps":{"timestamp":\#(now),"event":"update","content-state":{"home":1,"away":0}}}"#.utf8),
            isTerminal: false, sequence: eventTime.millisecondsSince1970)
    }
}
