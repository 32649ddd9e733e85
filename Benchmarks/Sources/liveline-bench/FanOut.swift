import APNsSimulator
import Foundation
import LivelineAMQP
import LivelineBenchSupport
import LivelineCore
import LivelineMessaging
import LivelineModels
import LivelineProducer
import LivelineStore
import Logging

// Tests: scripts/faults

/// A game's fan-out for the fault suite: one game on a domain that delivers per token
/// (`fans`), followed by `devices` devices, and `goals` updates, each of which the
/// translator turns into one job per device, bundled by send shard. Its own ledger
/// follows every (goal, device) push: delivered, or dropped by a documented rule (an older
/// goal superseded by a newer one for the same device), never lost, and in order.
struct FanOut: Sendable {
    static let domain = "fans"
    let run: Substring
    let devices: Int
    let goals: Int

    /// Each goal's push per device, by `apns-id`, derived once: the waits poll with it.
    private let apnsIDs: [[String]]

    init(devices: Int, goals: Int) {
        let run = Substring(UUID().uuidString.prefix(6).lowercased())
        self.run = run
        self.devices = devices
        self.goals = goals
        apnsIDs = (0..<goals).map { goal in
            (0..<devices).map { device in
                let token = GameBenchmark.token(run, device, kind: 3)
                let job = JobIdentity.jobId(eventId: Self.eventID(run, goal: goal), target: .device(token: token, kind: .update))
                return JobIdentity.apnsId(jobId: job).uuidString.lowercased()
            }
        }
    }

    var activity: String { "game-\(run)" }
    static func eventID(_ run: Substring, goal: Int) -> String { "game-\(run)-goal-\(goal)" }
    func eventID(goal: Int) -> String { Self.eventID(run, goal: goal) }
    func token(_ device: Int) -> String { GameBenchmark.token(run, device, kind: 3) }
    func jobID(goal: Int, device: Int) -> String {
        JobIdentity.jobId(eventId: eventID(goal: goal), target: .device(token: token(device), kind: .update))
    }

    /// The standard domains of the fault suite, and the game's domain delivering per token.
    static var domains: TranslatorConfiguration {
        var configuration = BenchEvents.translatorConfiguration()
        var fans = DomainConfiguration.score(bundleId: "com.example.liveline")
        fans.name = domain
        fans.delivery = .deviceTokens
        configuration.domains.append(fans)
        return configuration
    }

    /// Every device's update token for the game, as the app would register it.
    func register(in pipeline: Pipeline) async throws {
        try await pipeline.withStore { store in
            for device in 0..<devices {
                _ = try await store.registerUpdateToken(UpdateTokenRegistration(
                    activityID: activity, deviceID: "fan-\(device)/phone", userID: "", token: token(device),
                    domain: Self.domain, attributesType: "ScoreAttributes", at: Date()))
            }
        }
    }

    /// Publishes goal `goal` (the first carries the game's attributes) with confirms.
    func publish(goal: Int, amqpURL: String, topology: LivelineTopology) async throws {
        var logger = Logger(label: "bench.fan-out")
        logger.logLevel = .error
        let connection = try await AMQPConnection.connect(try AMQPConfiguration(url: amqpURL), logger: logger)
        defer { Task { await connection.close() } }
        let publisher = EventPublisher(connection: connection, source: "//liveline-bench/faults", topology: topology)
        let attributes = goal == 0
            ? ScoreAttributes(gameId: activity, league: "Fault League", homeTeam: .init(name: "Home", abbreviation: "HOM"),
                              awayTeam: .init(name: "Away", abbreviation: "AWY"))
            : nil
        let state = ScoreAttributes.ContentState(
            homeScore: goal, awayScore: 0, period: "1st half", clock: "\(goal * 5)'", status: .live,
            lastPlay: goal > 0 ? "Goal!" : nil)
        let event = try LivelineEvent.score(activityId: activity, state: state, attributes: attributes, id: eventID(goal: goal))
            .retyped(Self.domain)
        // A producer with confirms publishes again what the broker did not confirm.
        for attempt in 1...5 {
            do {
                try await publisher.publish(event)
                return
            } catch where attempt < 5 {
                try await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Devices that have received goal `goal`.
    func received(goal: Int, at simulator: APNsSimulator) -> Int {
        (0..<devices).filter { device in
            simulator.deliveries(toDevice: token(device)).contains { $0.apnsID.lowercased() == apnsIDs[goal][device] }
        }.count
    }

    /// Waits until every device has the last goal, or `timeout` passes.
    func waitForLastGoal(at simulator: APNsSimulator, timeout: Duration) async throws {
        let progress = Progress(total: devices, what: "devices with the last goal")
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let done = received(goal: goals - 1, at: simulator)
            progress.update(done)
            if done == devices { return }
            try await Task.sleep(for: .milliseconds(250))
        }
    }

    /// The ledger of every (goal, device) push, and the order at each device.
    func ledger(pipeline: Pipeline, duplicateBound: Int) async throws -> (verdict: Verdict, order: OrderCheck) {
        var steps: [String: (goal: Int, device: Int)] = [:]
        var events: [LossLedger.Event] = []
        for goal in 0..<goals {
            for device in 0..<devices {
                steps[apnsIDs[goal][device]] = (goal, device)
                events.append(.init(id: jobID(goal: goal, device: device), activity: "fan-\(device)", sequence: goal))
            }
        }
        var ledger = LossLedger(events: events, duplicateBound: duplicateBound)
        var order = OrderCheck()
        for device in 0..<devices {
            let deliveries = pipeline.simulator.deliveries(toDevice: token(device))
            for delivery in deliveries {
                if let step = steps[delivery.apnsID.lowercased()] {
                    ledger.deliveries[jobID(goal: step.goal, device: step.device), default: 0] += 1
                } else {
                    ledger.unexpectedDeliveries += 1
                }
            }
            order.add(deliveries, device: token(device)) { steps[$0]?.goal }
        }
        // Drops as the trace tells on-call: the sender's name the job by the start of its id,
        // the translator's the goal.
        let jobOf = Dictionary(events.map { (String($0.id.prefix(PushJob.shownIDLength)), $0.id) }) { first, _ in first }
        let goalOf = Dictionary(uniqueKeysWithValues: (0..<goals).map { (eventID(goal: $0), $0) })
        let trace = try await pipeline.withStore { try await $0.trace(activityID: activity, limit: 10 * goals * devices) }
        for entry in trace where entry.kind == .dropped {
            guard let drop = LossLedger.drop(fromTrace: entry.detail) else { continue }
            if entry.detail.hasPrefix("job ") {
                let shown = String(entry.detail.split(separator: " ")[1])
                ledger.drops[jobOf[shown] ?? shown] = drop.reason
            } else if let goal = goalOf[drop.eventID] {
                for device in 0..<devices { ledger.drops[jobID(goal: goal, device: device)] = drop.reason }
            }
        }
        return (ledger.verdict(), order)
    }
}

extension LivelineEvent {
    /// The same event for another domain, whose type it becomes.
    func retyped(_ domain: String) -> LivelineEvent {
        LivelineEvent(id: id, domain: domain, name: name, time: time, data: data)
    }
}
