import APNsSimulator
import Crypto
import Foundation
import LivelineAMQP
import LivelineAPNs
import LivelineCore
import LivelineMessaging
import LivelineModels
import LivelineProducer
import LivelineServices
import LivelineStore
import Logging
import ServiceLifecycle

/// Liveline end to end on one machine: domain events go through RabbitMQ, the translator,
/// the sender and real HTTP/2 + TLS into the APNs simulator, which verifies every provider
/// token's ES256 signature and records what each simulated device received.
///
/// It uses its own exchange and queue names (`quickstart.<run>.…`) and removes them at the
/// end, so it never touches a deployment's queues on the same broker.
public struct Quickstart: Sendable {
    public var amqp: AMQPConfiguration
    public var storePath: String
    public var timeout: Duration
    public var bundleID = "com.example.liveline"

    public init(amqp: AMQPConfiguration, storePath: String, timeout: Duration = .seconds(60)) {
        self.amqp = amqp
        self.storePath = storePath
        self.timeout = timeout
    }

    /// A simulated iPhone: who owns it and what Liveline pushed to it.
    public struct Device: Sendable {
        public var label: String
        public var token: String
        public var activityID: String
        public var deliveries: [APNsSimulatorDelivery]
    }

    /// The game's broadcast channel as the run left it.
    public struct GameChannel: Sendable {
        public var id: String
        /// What APNs received on it, in order.
        public var broadcasts: [APNsSimulatorDelivery]
        /// Deleted at APNs and marked deleted in the store after the final whistle.
        public var deleted: Bool
    }

    /// What happened, for printing and for tests.
    public struct Report: Sendable, CustomStringConvertible {
        public var devices: [Device]
        /// The game's channel, once opened.
        public var channel: GameChannel?
        /// The SQLite file that keeps the run's dead letters and traces.
        public var storePath: String
        public var deadLetterReasons: [String: Int]
        /// Every device got its pushes, ending with `end`; every fan's device was started
        /// once into the game's channel and then saw each broadcast and the end; the channel
        /// was deleted; and the bad event was dead-lettered.
        public var succeeded: Bool

        public var description: String {
            var lines = ["", "What each simulated device received (through RabbitMQ → translator → sender → APNs simulator):"]
            for device in devices {
                lines.append("")
                lines.append("  \(device.label) — token \(device.token.prefix(8))… — \(device.deliveries.count) push(es)")
                for delivery in device.deliveries { lines.append("    " + Self.summary(of: delivery)) }
            }
            lines.append("")
            if let channel {
                lines.append("  game channel \(channel.id) — \(channel.broadcasts.count) broadcast(s), \(channel.deleted ? "deleted after the end" : "STILL OPEN")")
                for broadcast in channel.broadcasts { lines.append("    " + Self.summary(of: broadcast)) }
                lines.append("  starts per device:")
                for device in devices {
                    let starts = device.deliveries.filter { Self.aps(of: $0)?["event"] as? String == "start" }
                    guard !starts.isEmpty else { continue }
                    let into = starts.allSatisfy { Quickstart.isStart(into: channel.id, $0) } ? "into the channel" : "NOT into the channel"
                    lines.append("    \(device.token.prefix(8))… \(starts.count) start(s), \(into)")
                }
            } else {
                lines.append("  game channel: NOT OPENED")
            }
            lines.append("")
            let reasons = deadLetterReasons.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
            lines.append("  dead-letter queue: \(reasons.isEmpty ? "empty" : reasons.joined(separator: ", "))")
            lines.append("")
            lines.append(succeeded
                ? "OK: every activity was updated and ended; every fan's device was started once into the game's channel, saw each "
                    + "broadcast and the end, and the channel was deleted; the bad event was dead-lettered."
                : "FAILED: see above.")
            lines.append("")
            lines.append("  The dead letters and every activity's trace stay in the quickstart's store. To see them:")
            lines.append("    export LIVELINE_STORE_URL=sqlite:\(storePath)")
            lines.append("    liveline dlq list; liveline trace \(devices.first.map { $0.activityID } ?? "<activity>")")
            return lines.joined(separator: "\n")
        }

        static func aps(of delivery: APNsSimulatorDelivery) -> [String: Any]? {
            (try? JSONSerialization.jsonObject(with: Data(delivery.payload)) as? [String: Any])?["aps"] as? [String: Any]
        }

        static func summary(of delivery: APNsSimulatorDelivery) -> String {
            guard let aps = aps(of: delivery) else { return "(unreadable payload)" }
            let event = aps["event"] as? String ?? "?"
            let state = aps["content-state"] as? [String: Any] ?? [:]
            let status = (state["status"] ?? state["currentStep"]).map { "\($0)" } ?? ""
            var text = "\(event.padding(toLength: 6, withPad: " ", startingAt: 0)) priority \(delivery.priority)  \(status)"
            if let alert = aps["alert"] as? [String: Any] {
                if let title = alert["title"] as? String {
                    text += "  alert “\(title)”"
                } else if let title = alert["title"] as? [String: Any], let key = title["loc-key"] as? String {
                    text += "  alert loc-key \(key)"
                }
            }
            if aps["dismissal-date"] != nil { text += "  (dismissal-date set)" }
            if let channel = aps["input-push-channel"] as? String { text += "  into channel \(channel)" }
            if delivery.headers["apns-channel-id"] != nil { text += "  (broadcast)" }
            return text
        }
    }

    /// Runs the scenario on `store`, or by default on a fresh SQLite file at ``storePath``.
    public func run(logger: Logger, on given: (any ActivityStore)? = nil) async throws -> Report {
        let id = UUID().uuidString.prefix(8).lowercased()
        let topology = LivelineTopology(prefix: "quickstart.\(id)", retryTiers: [.init(name: "2s", delay: .seconds(2))])

        let store: any ActivityStore
        if let given {
            store = given
        } else {
            try? FileManager.default.removeItem(atPath: storePath)
            try FileManager.default.createDirectory(
                at: URL(fileURLWithPath: storePath).deletingLastPathComponent(), withIntermediateDirectories: true)
            store = try SQLiteLivelineStore(configuration: .init(path: storePath))
        }

        // An ephemeral provider key the simulator trusts, so every JWT's signature is checked.
        let key = P256.Signing.PrivateKey()
        let credentials = (team: "LIVELINE01", keyID: "QUICKSTART")
        let simulator = try APNsSimulator(
            configuration: .init(
                port: 0, startWithOneStream: true,
                trustedKeys: [.init(keyID: credentials.keyID, teamID: credentials.team, publicKeyPEM: key.publicKey.pemRepresentation)]))
        let port = try await simulator.start()
        let client = try APNsClient(
            configuration: .init(
                bundleID: bundleID, teamID: credentials.team, keyID: credentials.keyID, privateKeyPEM: key.pemRepresentation,
                endpoint: APNsEndpoint(host: "127.0.0.1", port: port, trust: .pem(simulator.certificatePEM))),
            logger: logger)

        var connection = amqp
        func connect(_ name: String) async throws -> AMQPConnection {
            connection.connectionName = "quickstart-\(name)"
            return try await AMQPConnection.connect(connection, logger: logger)
        }
        let translatorIn = try await connect("translator-in")
        let translatorOut = try await connect("translator-out")
        let senderIn = try await connect("sender-in")
        let senderOut = try await connect("sender-out")
        let keeping = try await connect("dead-letter-keeper")
        let producer = try await connect("producer")
        try await producer.declare(topology.amqp)

        let scenario = DemoScenario(userSuffix: String(id))
        try await scenario.registerDevices(in: store)

        let clients = APNsClientDirectory([client])
        let translator = TranslatorService(
            consumer: translatorIn, publisher: translatorOut, store: store,
            translator: .init(configuration: .standard(bundleId: bundleID)), topology: topology, logger: logger,
            channels: ChannelOpener(store: store, clients: clients, keys: AppKeys(defaultApp: bundleID), logger: logger))
        let sender = SenderService(
            consuming: senderIn, publishing: senderOut, clients: clients, store: store,
            settings: SenderSettings(topology: topology), logger: logger)
        // The keeper moves the run's dead letters into the store, as in every sender, so
        // `liveline dlq list` shows them after the run.
        let keeper = DeadLetterKeeper(connection: keeping, store: store, topology: topology, logger: logger)
        let group = ServiceGroup(configuration: .init(
            services: [translator, sender, keeper].map(ServiceGroupConfiguration.ServiceConfiguration.init(named:)), logger: logger))

        let report = try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            // Each step is meant to be its own push: published before the sender consumes,
            // the first steps would wait in liveline.send together and be coalesced.
            let ready = ContinuousClock.now + .seconds(30)
            for queue in topology.translateQueues + topology.sendQueues {
                while try await producer.consumerCount(queue: queue) == 0, ContinuousClock.now < ready {
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
            let publisher = EventPublisher(connection: producer, source: "//quickstart.liveline", topology: topology)
            try await scenario.publish(with: publisher, badEventTo: topology.eventsExchange, store: store) {
                // On a loaded machine the starts can take longer than the pause between steps.
                // A broadcast that reaches APNs before a device's start is one that device never
                // hears (it is not on the channel yet), as on a real phone; a game's goals come
                // minutes after kick-off, so the demo waits for every fan's start.
                let started = ContinuousClock.now + .seconds(10)
                while scenario.fanDevices.contains(where: { simulator.deliveries(toDevice: $0).isEmpty }), ContinuousClock.now < started {
                    try? await Task.sleep(for: .milliseconds(20))
                }
            }

            let deadline = ContinuousClock.now + timeout
            var report = try await currentReport(scenario, simulator, store)
            while !report.succeeded, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(200))
                report = try await currentReport(scenario, simulator, store)
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            return try await currentReport(scenario, simulator, store)
        }

        for queue in topology.amqp.queues { try? await producer.delete(queue: queue.name) }
        for exchange in topology.amqp.exchanges { try? await producer.delete(exchange: exchange.name) }
        for connection in [translatorIn, translatorOut, senderIn, senderOut, keeping, producer] { await connection.close() }
        await client.shutdown()
        try await simulator.stop()
        return report
    }

    private func currentReport(
        _ scenario: DemoScenario, _ simulator: APNsSimulator, _ store: any ActivityStore
    ) async throws -> Report {
        let devices = scenario.devices.map {
            Device(label: $0.label, token: $0.token, activityID: $0.activityID, deliveries: simulator.deliveries(toDevice: $0.token))
        }
        var channel: GameChannel?
        if let stored = try await store.channel(domain: "score", key: scenario.gameID) {
            channel = GameChannel(
                id: stored.channelID, broadcasts: simulator.deliveries(toChannel: stored.channelID),
                deleted: stored.deletedAt != nil && !simulator.channelIDs(bundleID: bundleID).contains(stored.channelID))
        }
        let personal = zip(scenario.devices, devices).filter { !$0.0.isFan }.map(\.1)
        let fans = zip(scenario.devices, devices).filter { $0.0.isFan }.map { (device: $0.1, onChannel: $0.0.listensOnChannel) }
        let personalDone = personal.allSatisfy { device in device.deliveries.contains { $0.payloadString.contains(#""event":"end""#) } }
        let gameDone = channel.map { Self.gameIsComplete(fans: fans, channel: $0) } ?? false
        // The letters as the keeper stored them: what `liveline dlq list` shows.
        let reasons = try await store.deadLetterCounts(matching: .init())
        return Report(
            devices: devices, channel: channel, storePath: storePath, deadLetterReasons: reasons,
            succeeded: personalDone && gameDone && reasons.values.reduce(0, +) >= 1)
    }

    /// Whether the game went as a fan's phone would show it: each device started once (into
    /// the game's channel on iOS 18, without it on an older one), then every broadcast after
    /// its start in order, ending with the end (per token on the older one); and the channel
    /// deleted.
    static func gameIsComplete(fans: [(device: Device, onChannel: Bool)], channel: GameChannel) -> Bool {
        guard channel.deleted, let last = channel.broadcasts.last, last.payloadString.contains(#""event":"end""#) else {
            return false
        }
        return fans.allSatisfy { fan, onChannel in
            guard let start = fan.deliveries.first,
                onChannel ? isStart(into: channel.id, start) : isStartWithoutChannel(start)
            else { return false }
            let after = fan.deliveries.dropFirst()
            guard after.last?.payloadString.contains(#""event":"end""#) == true else { return false }
            // On the channel, what follows the start is the game's broadcasts in order, ending
            // with the end; an update a newer one overtook under load may be missing (coalesced,
            // and traced), nothing else may be.
            guard onChannel else {
                // Per token, the device's own lane coalesces on its own, so its updates need not
                // be the channel's: they only have to be newer each time, ending with the end.
                let timestamps = after.compactMap { Report.aps(of: $0)?["timestamp"] as? Int }
                return timestamps.count == after.count && zip(timestamps, timestamps.dropFirst()).allSatisfy { $0 < $1 }
            }
            var broadcasts = channel.broadcasts.map(\.payload)[...]
            for payload in after.map(\.payload) {
                guard let found = broadcasts.firstIndex(of: payload) else { return false }
                broadcasts = broadcasts[broadcasts.index(after: found)...]
            }
            return true
        }
    }

    /// Whether `delivery` is a start for a device too old for channels: it reports its own token.
    public static func isStartWithoutChannel(_ delivery: APNsSimulatorDelivery?) -> Bool {
        guard let delivery, let aps = Report.aps(of: delivery) else { return false }
        return aps["event"] as? String == "start" && aps["input-push-channel"] == nil && aps["input-push-token"] as? Int == 1
    }

    /// Whether `delivery` is a start that makes the activity listen on `channelID`.
    public static func isStart(into channelID: String, _ delivery: APNsSimulatorDelivery?) -> Bool {
        guard let delivery, let aps = Report.aps(of: delivery) else { return false }
        return aps["event"] as? String == "start" && aps["input-push-channel"] as? String == channelID
    }
}
