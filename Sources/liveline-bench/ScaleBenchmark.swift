import APNsSimulator
import ArgumentParser
import AsyncHTTPClient
import Crypto
import Foundation
import LivelineAMQP
import LivelineBenchSupport
import LivelineModels
import LivelineProducer
import LivelineRuntime
import LivelineStore
import Logging
import NIOCore

/// `liveline-bench scale`: horizontal scaling on one machine. Runs several `liveline
/// translator` and `liveline sender` processes on one PostgreSQL store and one broker,
/// feeds them a steady stream of ride updates, and checks at an APNs simulator that every
/// event arrived once or was dropped by a documented rule (coalesced, stale), and that
/// each device applies its activity's updates in order. Prints each worker's share of the
/// work and the totals.
///
/// Order: two senders can take two jobs of one activity at once, so a push may reach APNs
/// after a newer one. The device ignores an update whose `aps.timestamp` is older than the
/// last it applied (ActivityKit's rule), and the translator makes each activity's
/// timestamps strictly increasing, so what a device shows still follows the events. The
/// check therefore requires timestamps in event order and the newest state to win, and
/// counts late arrivals separately.
struct ScaleBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scale",
        abstract: "Run N translators and M senders on PostgreSQL against one broker and check what reached APNs.",
        discussion: "scripts/scale-demo starts RabbitMQ and PostgreSQL on loopback and runs this."
    )

    @Option(help: "The liveline executable the workers run (default: beside this one).") var liveline: String?
    @Option(help: "Broker URL.") var amqpURL = "amqp://guest:guest@127.0.0.1:5672/%2f"
    @Option(help: "PostgreSQL URL (the store every worker shares).") var storeURL: String
    @Option(help: "Translator processes.") var translators = 2
    @Option(help: "Sender processes.") var senders = 2
    @Option(help: "Activities, one device each.") var activities = 200
    @Option(help: "Events per activity.") var eventsPerActivity = 10
    @Option(help: "Events per second, across every activity.") var rate = 400
    @Option(help: "Seconds to wait for the last pushes after publishing.") var drainTimeout = 60
    @Flag(help: "Print the summary as JSON.") var json = false

    mutating func validate() throws {
        guard translators >= 1, senders >= 1 else { throw ValidationError("--translators and --senders must be at least 1") }
        guard activities >= 1, eventsPerActivity >= 1, rate >= 1 else {
            throw ValidationError("--activities, --events-per-activity and --rate must be at least 1")
        }
        guard storeURL.hasPrefix("postgres://") || storeURL.hasPrefix("postgresql://") else {
            throw ValidationError("--store-url must be a postgres:// URL: the workers share one store")
        }
    }

    func run() async throws {
        var logger = Logger(label: "scale")
        logger.logLevel = .warning
        let executable = liveline ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("liveline").path
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw ValidationError("no liveline executable at \(executable); build it or pass --liveline")
        }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("liveline-scale-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let runID = UUID().uuidString.prefix(6).lowercased()

        // APNs: a simulator in this process, which checks every JWT against the key.
        let key = P256.Signing.PrivateKey()
        let simulator = try APNsSimulator(configuration: .init(
            maximumConcurrentStreams: 1000,
            trustedKeys: [.init(keyID: "SCALEDEMO1", teamID: "SCALETEAM1", publicKeyPEM: key.publicKey.pemRepresentation)]))
        let simulatorPort = try await simulator.start()
        try key.pemRepresentation.write(to: work.appendingPathComponent("key.p8"), atomically: true, encoding: .utf8)
        try simulator.certificatePEM.write(to: work.appendingPathComponent("ca.pem"), atomically: true, encoding: .utf8)

        // One device per activity, registered as the app would.
        let devices = (0..<activities).map { index in
            Device(activity: "scale-\(runID)-\(index)", user: "u-\(runID)-\(index)", token: Self.token())
        }
        try await StoreLocation(url: storeURL).withStore(logger: logger) { store in
            for device in devices {
                _ = try await store.registerUpdateToken(UpdateTokenRegistration(
                    activityID: device.activity, deviceID: "phone", userID: device.user, token: device.token,
                    domain: "ride", attributesType: "RideAttributes", at: Date()))
            }
        }

        // The workers, each its own process with its own ops port.
        var environment = ProcessInfo.processInfo.environment
        environment["LIVELINE_AMQP_URL"] = amqpURL
        environment["LIVELINE_STORE_URL"] = storeURL
        environment["LIVELINE_OPS_HOST"] = "127.0.0.1"
        environment["LIVELINE_APPS"] = "scale"
        environment["LIVELINE_APP_SCALE_BUNDLE_ID"] = "com.example.liveline"
        environment["LIVELINE_APP_SCALE_TEAM_ID"] = "SCALETEAM1"
        environment["LIVELINE_APP_SCALE_KEY_ID"] = "SCALEDEMO1"
        environment["LIVELINE_APP_SCALE_KEY_FILE"] = work.appendingPathComponent("key.p8").path
        environment["LIVELINE_APNS_ENDPOINT"] = "127.0.0.1:\(simulatorPort)"
        environment["LIVELINE_APNS_CA_FILE"] = work.appendingPathComponent("ca.pem").path
        var workers: [Worker] = []
        for (role, count) in [("translator", translators), ("sender", senders)] {
            for index in 1...count {
                workers.append(try Worker.start(
                    role: role, name: "\(role)-\(index)", executable: executable, environment: environment,
                    opsPort: 19_090 + workers.count, logDirectory: work))
            }
        }
        defer { for worker in workers { worker.stop() } }
        Self.progress("started \(translators) translator(s) and \(senders) sender(s); logs in \(work.path)")
        for worker in workers { try await worker.waitUntilReady(timeout: .seconds(120)) }

        // A steady stream: round n sends every activity its n-th event, paced to --rate.
        let connection = try await AMQPConnection.connect(try AMQPConfiguration(url: amqpURL), logger: logger)
        let publisher = EventPublisher(connection: connection, source: "//liveline-bench/scale")
        let total = activities * eventsPerActivity
        let clock = ContinuousClock()
        let started = clock.now
        let chunk = max(1, min(100, rate / 10))
        var published = 0
        let base = Int(Date().timeIntervalSince1970) + 600
        for round in 0..<eventsPerActivity {
            var batch: [LivelineEvent] = []
            for device in devices {
                // etaStartSeconds counts the events of an activity: the order check reads it.
                let state = RideAttributes.ContentState(
                    driverName: "Maria", driverPhoto: "car.fill", vehicleDescription: "White Toyota Camry",
                    etaStartSeconds: base + round, etaEndSeconds: base + round + 300, status: .driverEnRoute,
                    distanceRemaining: Double(eventsPerActivity - round))
                batch.append(try .ride(
                    activityId: device.activity, userId: device.user, state: state, id: "\(device.activity)-\(round)"))
                if batch.count == chunk || device.activity == devices.last?.activity {
                    try await publisher.publish(contentsOf: batch)
                    published += batch.count
                    batch.removeAll(keepingCapacity: true)
                    let due = started + .seconds(Double(published) / Double(rate))
                    if clock.now < due { try await Task.sleep(until: due) }
                    if published % max(1, total / 20) < chunk { Self.progress(Self.bar(published, of: total, "published")) }
                }
            }
        }
        let publishSeconds = (clock.now - started).seconds
        await connection.close()

        // Wait for the pushes: every event is delivered or counted as coalesced.
        let drainDeadline = clock.now + .seconds(drainTimeout)
        var shares: [WorkerShare] = []
        while true {
            shares = try await workers.asyncMap { try await $0.share() }
            let delivered = simulator.deliveredDeviceCount
            let coalesced = shares.reduce(0) { $0 + $1.coalesced }
            Self.progress(Self.bar(delivered + coalesced, of: total, "delivered or coalesced"))
            if delivered + coalesced >= total || clock.now > drainDeadline { break }
            try await Task.sleep(for: .milliseconds(500))
        }
        let elapsed = (clock.now - started).seconds
        // The workers count a batch once its acks and confirms are done: settle before the shares.
        let settle = clock.now + .seconds(5)
        while clock.now < settle {
            let taken = shares.filter { $0.role == "translator" }.reduce(0) { $0 + $1.work }
            let pushed = shares.filter { $0.role == "sender" }.reduce(0) { $0 + $1.work }
            if taken >= total && pushed >= simulator.deliveredDeviceCount { break }
            try await Task.sleep(for: .milliseconds(200))
            shares = try await workers.asyncMap { try await $0.share() }
        }

        // What the simulator saw, device by device.
        var check = Check()
        for device in devices {
            let deliveries = simulator.deliveries(toDevice: device.token)
            check.delivered += deliveries.count
            let ids = deliveries.map(\.apnsID)
            check.duplicates += ids.count - Set(ids).count
            let pushes = deliveries.compactMap { Self.push($0.payload, base: base) }
            check.unreadable += deliveries.count - pushes.count
            // Arrival order: a push after a newer one is late (the device ignores it).
            var newest = -1
            for push in pushes {
                if push.step < newest { check.lateArrivals += 1 }
                newest = max(newest, push.step)
            }
            // Event order: timestamps must rise with the events, so the device keeps the newest.
            let byEvent = pushes.sorted { $0.step < $1.step }
            check.outOfOrder += zip(byEvent, byEvent.dropFirst()).filter { $0.timestamp >= $1.timestamp }.count
            if byEvent.last?.step != eventsPerActivity - 1 { check.newestMissing += 1 }
        }
        check.coalesced = shares.reduce(0) { $0 + $1.coalesced }
        check.otherDrops = shares.reduce(0) { $0 + $1.otherDrops }
        check.deadLetters = shares.reduce(0) { $0 + $1.deadLetters }
        check.missing = total - check.delivered - check.coalesced - check.otherDrops

        let summary = Summary(
            translators: translators, senders: senders, activities: activities, events: total,
            publishSeconds: publishSeconds, elapsedSeconds: elapsed, workers: shares, check: check)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(summary), as: UTF8.self))
        } else {
            print(summary.text)
        }
        for worker in workers { worker.stop() }
        try await simulator.stop()
        if !check.passed { throw ExitCode.failure }
        try? FileManager.default.removeItem(at: work)
    }

    /// The event number a ride push carries in `etaStartSeconds`, and its `aps.timestamp`.
    static func push(_ payload: [UInt8], base: Int) -> (step: Int, timestamp: Int)? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any],
            let aps = object["aps"] as? [String: Any], let state = aps["content-state"] as? [String: Any],
            let eta = state["etaStartSeconds"] as? Int, let timestamp = aps["timestamp"] as? Int
        else { return nil }
        return (eta - base, timestamp)
    }

    static func token() -> String {
        (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    static func progress(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    static func bar(_ done: Int, of total: Int, _ what: String) -> String {
        let fraction = total == 0 ? 1 : min(1, Double(done) / Double(total))
        let filled = Int(fraction * 30)
        return "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: 30 - filled) + "] "
            + "\(done)/\(total) \(what)"
    }
}

/// One activity's device.
struct Device: Sendable {
    var activity: String
    var user: String
    var token: String
}

/// What the simulator's records say.
struct Check: Codable, Sendable {
    var delivered = 0
    var coalesced = 0
    /// Other documented drops (stale: another translator applied a newer event first).
    var otherDrops = 0
    var deadLetters = 0
    var missing = 0
    var duplicates = 0
    /// Pushes whose `aps.timestamp` does not rise with the events: the device could show an older state.
    var outOfOrder = 0
    /// Pushes that reached APNs after a newer one of their activity; the device ignores them.
    var lateArrivals = 0
    var unreadable = 0
    /// Activities whose newest event did not reach the device (coalescing keeps the newest).
    var newestMissing = 0

    var passed: Bool {
        missing == 0 && duplicates == 0 && outOfOrder == 0 && unreadable == 0 && newestMissing == 0 && deadLetters == 0
    }
}

/// One worker's part of the run, from its `/metrics`.
struct WorkerShare: Codable, Sendable {
    var name: String
    var role: String
    /// Events taken (translator) or pushes delivered (sender).
    var work: Int
    var coalesced: Int
    var otherDrops: Int
    var deadLetters: Int
    var cpuSeconds: Double?
    var peakRSSMiB: Double?
}

struct Summary: Codable, Sendable {
    var translators: Int
    var senders: Int
    var activities: Int
    var events: Int
    var publishSeconds: Double
    var elapsedSeconds: Double
    var workers: [WorkerShare]
    var check: Check

    var text: String {
        var lines = [
            "scale: \(translators) translator(s), \(senders) sender(s), 1 broker, PostgreSQL; "
                + "\(events) events over \(activities) activities, published in \(String(format: "%.1f", publishSeconds)) s",
            "",
            "worker        work      share   cpu s   peak RSS",
        ]
        for role in ["translator", "sender"] {
            let group = workers.filter { $0.role == role }
            let sum = max(1, group.reduce(0) { $0 + $1.work })
            for worker in group {
                lines.append(
                    worker.name.padding(toLength: 12, withPad: " ", startingAt: 0)
                        + String(format: "%6d %8.1f %%  %6.1f   %6.1f MiB", worker.work, 100 * Double(worker.work) / Double(sum),
                                 worker.cpuSeconds ?? 0, worker.peakRSSMiB ?? 0))
            }
            let what = role == "translator" ? "events taken" : "pushes delivered"
            lines.append("  \(role)s: \(group.reduce(0) { $0 + $1.work }) \(what)")
        }
        lines += [
            "",
            "at the simulator: \(check.delivered) delivered, \(check.missing) missing, \(check.duplicates) duplicate(s), "
                + "\(check.outOfOrder) with timestamps out of event order, \(check.newestMissing) activit(ies) without their newest state",
            "documented drops: \(check.coalesced) coalesced (a newer state in the same batch), \(check.otherDrops) other "
                + "(stale: another translator applied a newer event first); \(check.deadLetters) dead letter(s)",
            "late arrivals: \(check.lateArrivals) push(es) reached APNs after a newer one of their activity (two senders "
                + "took them at once); the device ignores them, their aps.timestamp being older",
            String(format: "throughput: %.0f events/s end to end (%.1f s from the first publish to the last push)",
                   Double(check.delivered + check.coalesced) / max(elapsedSeconds, 0.001), elapsedSeconds),
            check.passed
                ? "PASS: every event arrived once or was dropped by a documented rule; every device applies its updates in order"
                : "FAIL",
        ]
        return lines.joined(separator: "\n")
    }
}

/// A `liveline` worker process with its ops port.
final class Worker: Sendable {
    let name: String
    let role: String
    let opsPort: Int
    let process: Process

    private init(name: String, role: String, opsPort: Int, process: Process) {
        self.name = name
        self.role = role
        self.opsPort = opsPort
        self.process = process
    }

    static func start(
        role: String, name: String, executable: String, environment: [String: String], opsPort: Int, logDirectory: URL
    ) throws -> Worker {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [role, "--log-level", "warning"]
        var environment = environment
        environment["LIVELINE_OPS_PORT"] = "\(opsPort)"
        process.environment = environment
        let log = logDirectory.appendingPathComponent("\(name).log")
        FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        return Worker(name: name, role: role, opsPort: opsPort, process: process)
    }

    func waitUntilReady(timeout: Duration) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard process.isRunning else {
                throw ValidationError("\(name) exited with status \(process.terminationStatus) before it was ready; see its log")
            }
            if (try? await get("/readyz").status) == 200 { return }
            try await Task.sleep(for: .milliseconds(250))
        }
        throw ValidationError("\(name) was not ready within \(timeout)")
    }

    func share() async throws -> WorkerShare {
        let metrics = try await get("/metrics").body
        func value(_ prefix: String) -> Double {
            metrics.split(separator: "\n").filter { $0.hasPrefix(prefix) }
                .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }.reduce(0, +)
        }
        let usage = ProcessUsage.of(pid: process.processIdentifier)
        if role == "translator" {
            let coalesced = Int(value(#"liveline_translator_events_dropped_total{reason="superseded"}"#))
            return WorkerShare(
                name: name, role: role, work: Int(value("liveline_translator_events_received_total")),
                coalesced: coalesced,
                otherDrops: Int(value("liveline_translator_events_dropped_total")) - coalesced,
                deadLetters: Int(value("liveline_translator_events_dead_lettered_total")),
                cpuSeconds: usage?.cpuSeconds, peakRSSMiB: usage?.peakRSSMiB)
        }
        let delivered = Int(value(#"liveline_sender_pushes_total{outcome="delivered""#))
        return WorkerShare(
            name: name, role: role, work: delivered, coalesced: 0,
            otherDrops: Int(value("liveline_sender_dropped_total")),
            deadLetters: Int(value("liveline_sender_dead_letters_total")),
            cpuSeconds: usage?.cpuSeconds, peakRSSMiB: usage?.peakRSSMiB)
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    private func get(_ path: String) async throws -> (status: Int, body: String) {
        let response = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: "http://127.0.0.1:\(opsPort)\(path)"), timeout: .seconds(5))
        let body = try await response.body.collect(upTo: 4 << 20)
        return (Int(response.status.code), String(buffer: body))
    }
}

extension Array where Element: Sendable {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
