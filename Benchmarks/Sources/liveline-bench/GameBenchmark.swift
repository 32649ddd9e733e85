import ArgumentParser
import Foundation
import LivelineAMQP
import LivelineBenchSupport
import LivelineCore
import LivelineModels
import LivelineProducer
import LivelineStore
import Logging

// Tests: scripts/bench

/// `liveline-bench game`: one game for a big audience, with `liveline translator` and
/// `liveline sender` as processes on a real broker and store, and the APNs simulator.
///
/// Every follower has one device with a push-to-start token. It measures the time from the
/// start event's publish to the simulator's answer to the last push-to-start; then one goal,
/// which is a single broadcast request; then the same goal sent per token to as many
/// devices (a second game on a domain that delivers per token), for comparison; and each
/// worker's CPU and peak RSS.
struct GameBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "game",
        abstract: "A game's start for N followers by push-to-start, then a goal as one broadcast and per token.",
        discussion: "scripts/bench game starts RabbitMQ (and PostgreSQL with --postgres) and runs this on a release build."
    )

    @OptionGroup var workers: WorkerOptions
    @Option(help: "Store URL the workers share (default: a fresh SQLite file).") var storeURL: String?
    @Option(help: "Followers, one device each.") var followers = 100_000
    @Option(help: "Seconds to wait for each fan-out.") var timeout = 300
    @Option(help: "Seconds to let the system settle before each goal.") var settleSeconds = 5
    @Flag(help: "Print the summary as JSON.") var json = false

    mutating func validate() throws {
        guard followers >= 1 else { throw ValidationError("--followers must be at least 1") }
        guard timeout >= 1 else { throw ValidationError("--timeout must be at least 1 (seconds)") }
        guard settleSeconds >= 0 else { throw ValidationError("--settle-seconds must be 0 or more") }
    }

    /// The standard domains, plus the same game delivered per token, for the comparison.
    static var domains: TranslatorConfiguration {
        var configuration = TranslatorConfiguration.standard(bundleId: "com.example.liveline")
        var perToken = DomainConfiguration.score(bundleId: "com.example.liveline")
        perToken.name = "score-per-token"
        perToken.delivery = .deviceTokens
        configuration.domains.append(perToken)
        return configuration
    }

    func run() async throws {
        let summary = try await Pipeline.with(
            executable: workers.liveline, amqpURL: workers.amqpURL, storeURL: storeURL, label: "game", domains: Self.domains,
            passed: { $0.passed }, measure)
        if json { try printJSON(summary) } else { print(summary.text) }
        if !summary.passed { throw ExitCode.failure }
    }

    private func measure(_ pipeline: Pipeline) async throws -> Summary {
        let run = Substring(UUID().uuidString.prefix(6).lowercased())
        let game = "game-\(run)", perTokenGame = "game-per-token-\(run)"
        try await seed(pipeline, run: run, perTokenGame: perTokenGame)

        try await pipeline.startWorker("translator")
        try await pipeline.startWorker("sender")
        let meter = UsageMeter(broker: BrokerUsage())
        let before = meter.sample(pipeline)
        var logger = Logger(label: "bench.game")
        logger.logLevel = .error
        let connection = try await AMQPConnection.connect(try AMQPConfiguration(url: workers.amqpURL), logger: logger)
        defer { Task { await connection.close() } }
        let publisher = EventPublisher(connection: connection, source: "//liveline-bench/game")
        let simulator = pipeline.simulator
        func answered() -> Int { simulator.statistics.responsesByStatus[200] ?? 0 }
        var clock = Date()
        func next() -> Date {
            clock.addTimeInterval(1)
            return clock
        }
        let attributes = ScoreAttributes(
            gameId: game, league: "Bench League", homeTeam: .init(name: "Home", abbreviation: "HOM"),
            awayTeam: .init(name: "Away", abbreviation: "AWY"))
        func state(_ home: Int, _ status: GameStatus) -> ScoreAttributes.ContentState {
            .init(homeScore: home, awayScore: 0, period: "1st half", clock: "\(home * 10)'", status: status)
        }

        // The channel opens with the game's first event.
        var base = answered()
        try await publisher.publish(try .score(activityId: game, state: state(0, .scheduled), attributes: attributes, time: next()))
        let channel = try await waitFor("the game's channel", timeout: .seconds(timeout)) {
            try await pipeline.withStore { try await $0.channel(domain: "score", key: game) }?.channelID
        }
        _ = try await waitUntil(answered() >= base + 1, "the first broadcast")

        // The start: one push-to-start per follower's device, into the channel.
        base = answered()
        let startPublished = ContinuousClock.now
        try await publisher.publish(try .score(
            activityId: game, state: state(0, .live), attributes: attributes, topics: ["team:bench-home"], time: next()))
        _ = try await waitUntil(answered() >= base + followers, "push-to-start answered", total: followers, base: base, answered)
        let startSeconds = (ContinuousClock.now - startPublished).seconds
        let afterStart = meter.sample(pipeline)
        let starts = simulator.statistics.responsesByStatus[200].map { $0 - base } ?? 0
        let intoChannel = simulator.deliveries(toDevice: Self.token(run, 0, kind: 1)).first.map {
            $0.payloadString.contains("\"input-push-channel\":\"\(channel)\"")
        } ?? false

        // One goal: one broadcast request, whatever the audience. A real goal comes minutes
        // after kick-off: let the broker and the workers finish the start's aftermath (acks,
        // the quorum queue's log, the traces) first, so this times the goal alone.
        try await Task.sleep(for: .seconds(settleSeconds))
        base = answered()
        let goalPublished = ContinuousClock.now
        try await publisher.publish(try .score(activityId: game, state: state(1, .live), time: next()))
        _ = try await waitUntil(answered() >= base + 1, "the goal's broadcast")
        let goalSeconds = (ContinuousClock.now - goalPublished).seconds
        let broadcasts = simulator.deliveries(toChannel: channel).count

        // The same goal per token to as many devices: the second game's first event first.
        base = answered()
        try await publisher.publish(try LivelineEvent.score(
            activityId: perTokenGame, state: state(0, .live), attributes: attributes, time: next()).retyped("score-per-token"))
        _ = try await waitUntil(answered() >= base + followers, "the per-token game's first update", total: followers, base: base, answered)
        try await Task.sleep(for: .seconds(settleSeconds))
        base = answered()
        let perTokenPublished = ContinuousClock.now
        try await publisher.publish(try LivelineEvent.score(activityId: perTokenGame, state: state(1, .live), time: next())
            .retyped("score-per-token"))
        _ = try await waitUntil(
            answered() >= base + followers, "the goal per token", total: followers, base: base, answered)
        let perTokenSeconds = (ContinuousClock.now - perTokenPublished).seconds
        let after = meter.sample(pipeline)

        return Summary(
            followers: followers, store: pipeline.storeURL.hasPrefix("sqlite:") ? "SQLite" : "PostgreSQL",
            startSeconds: startSeconds, startsAnswered: starts, startsIntoChannel: intoChannel,
            goalBroadcastMilliseconds: goalSeconds * 1000, broadcasts: broadcasts, goalPerTokenSeconds: perTokenSeconds,
            duringStart: meter.usage(before: before, after: afterStart, events: followers),
            overall: meter.usage(before: before, after: after, events: 2 * followers))
    }

    /// Every follower follows the home team and has one device with a push-to-start token;
    /// the same number of devices subscribed to the per-token game. Written straight to the
    /// store, as the api would, before the workers start.
    private func seed(_ pipeline: Pipeline, run: Substring, perTokenGame: String) async throws {
        let progress = Progress(total: followers, what: "followers registered")
        try await pipeline.withStore { store in
            let now = Date()
            let chunk = 64
            for start in stride(from: 0, to: followers, by: chunk) {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in start..<min(start + chunk, followers) {
                        group.addTask {
                            let user = "fan-\(run)-\(index)"
                            _ = try await store.follow(userID: user, topic: "team:bench-home", at: now)
                            try await store.registerPushToStartToken(PushToStartToken(
                                userID: user, attributesType: "ScoreAttributes", deviceID: "phone",
                                token: Self.token(run, index, kind: 1), registeredAt: now, osVersion: "18.1"))
                            _ = try await store.registerUpdateToken(UpdateTokenRegistration(
                                activityID: perTokenGame, deviceID: "\(user)/phone", userID: "", token: Self.token(run, index, kind: 2),
                                domain: "score-per-token", attributesType: "ScoreAttributes", at: now))
                        }
                    }
                    try await group.waitForAll()
                }
                progress.update(min(start + chunk, followers))
            }
        }
    }

    /// A device token unique to the run, the follower and its use.
    static func token(_ run: Substring, _ index: Int, kind: Int) -> String {
        let prefix = Array(run.utf8).map { String(format: "%02x", $0) }.joined()
        return prefix + String(format: "%02x%0*x", kind, 62 - prefix.count, index)
    }

    /// Seconds until `condition` holds, polling every 10 ms, with a progress bar when `total` is given.
    private func waitUntil(
        _ condition: @autoclosure () -> Bool, _ what: String, total: Int? = nil, base: Int = 0, _ done: () -> Int = { 0 }
    ) async throws -> Double {
        let started = ContinuousClock.now
        let deadline = started + .seconds(timeout)
        let progress = total.map { Progress(total: $0, what: what) }
        while !condition() {
            guard ContinuousClock.now < deadline else { throw BenchError("timed out waiting for \(what)") }
            progress?.update(done() - base)
            try await Task.sleep(for: .milliseconds(10))
        }
        progress?.update(total ?? 0)
        return (ContinuousClock.now - started).seconds
    }

    private func waitFor<T>(_ what: String, timeout: Duration, _ value: () async throws -> T?) async throws -> T {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let found = try await value() { return found }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw BenchError("timed out waiting for \(what)")
    }

    struct Summary: Codable, Sendable {
        var followers: Int
        var store: String
        var startSeconds: Double
        var startsAnswered: Int
        var startsIntoChannel: Bool
        var goalBroadcastMilliseconds: Double
        var broadcasts: Int
        var goalPerTokenSeconds: Double
        /// CPU per start and peak RSS, from before the start to its last answer.
        var duringStart: [UsageMeter.Usage]
        /// CPU per push over the whole run (starts and per-token goal), peak RSS at the end.
        var overall: [UsageMeter.Usage]

        /// Every follower got exactly one start, into the channel, and one broadcast carried the goal.
        var passed: Bool { startsAnswered == followers && startsIntoChannel && broadcasts == 2 }

        var text: String {
            var lines = [
                "game: \(followers) followers, one device each, \(store); translator and sender as processes",
                String(format: "  start → last push-to-start answered: %.2f s (%.0f starts/s), %d answered, into the channel: %@",
                       startSeconds, Double(followers) / startSeconds, startsAnswered, startsIntoChannel ? "yes" : "NO"),
                String(format: "  one goal, broadcast: %.1f ms (one request; %d broadcasts on the channel)", goalBroadcastMilliseconds, broadcasts),
                String(format: "  the same goal per token to %d devices: %.2f s (%.0f pushes/s)",
                       followers, goalPerTokenSeconds, Double(followers) / goalPerTokenSeconds),
                "  during the start fan-out: process        cpu s   µs/start   peak RSS",
            ]
            for process in duringStart {
                lines.append("    " + process.name.padding(toLength: 36, withPad: " ", startingAt: 0)
                    + String(format: "%6.1f  %9.1f  %6.1f MiB", process.cpuSeconds, process.microsecondsPerEvent, process.peakRSSMiB))
            }
            lines.append(passed ? "PASS" : "FAIL: not every follower was started once into the channel, or the goal was not one broadcast")
            return lines.joined(separator: "\n")
        }
    }
}
