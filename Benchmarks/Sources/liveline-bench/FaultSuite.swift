import ArgumentParser
import Foundation
import LivelineAMQP
import LivelineBenchSupport
import LivelineChildProcess
import LivelineCore
import LivelineProducer
import LivelineStore

// Tests: scripts/faults

/// `liveline-bench faults`: each case runs Liveline (a translator and a sender as
/// processes, a real broker, SQLite, the APNs simulator) under a steady load, does
/// something bad to it a third of the way in, and prints the loss ledger. A case fails
/// when anything is lost, a drop breaks its rule, or duplicates pass their bound.
struct FaultSuite: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "faults",
        abstract: "Run the fault cases under load and check each one's loss ledger.",
        discussion: "scripts/faults starts RabbitMQ and runs this; `scripts/faults --long` runs the longer form."
    )

    @OptionGroup var workers: WorkerOptions
    @Option(help: "The broker's control script (restart, pause, resume, alarm on|off).")
    var brokerControl = ProcessInfo.processInfo.environment["LIVELINE_RABBITMQ_CTL"] ?? "scripts/rabbitmq"
    @Option(
        parsing: .upToNextOption,
        help: "Cases to run (default: all but the partitions, which need a cluster): \(FaultCase.allCases.map(\.rawValue).joined(separator: ", ")).")
    var cases: [FaultCase] = FaultCase.allCases.filter { !$0.needsCluster }
    @Flag(help: "The longer form: 20× the events, at a higher rate.") var long = false
    @Flag(help: "Print the results as JSON.") var json = false

    func validate() throws {
        if cases.contains(where: \.needsCluster), ((try? AMQPConfiguration(url: workers.amqpURL))?.brokers.count ?? 0) < 3 {
            throw ValidationError(
                "the partitions need a three-node cluster in --amqp-url and its control script in --broker-control "
                    + "(scripts/faults --cluster starts both)")
        }
        if cases.contains(.storeOutage), FaultCase.postgres.url.isEmpty || FaultCase.postgres.control.isEmpty {
            throw ValidationError(
                "store-outage needs LIVELINE_TEST_POSTGRES_URL and LIVELINE_TEST_POSTGRES_CTL (scripts/faults sets both); "
                    + "or leave it out with --cases")
        }
    }

    func run() async throws {
        var results: [CaseResult] = []
        var layout: Int?
        for fault in cases {
            // The cases share the broker. Workers refuse a layout of another shard count, so
            // between cases of different counts the drained stages are resharded, with
            // `liveline reshard` as an operator would.
            if let layout, layout != fault.shards { try await reshard(to: fault.shards) }
            layout = fault.shards
            Progress.line("faults: \(fault.rawValue): \(fault.summary)")
            let result = try await run(fault)
            if !json { print(result.text + "\n") }
            results.append(result)
        }
        if json {
            try printJSON(results)
        } else {
            print("faults: " + results.map { "\($0.name) \($0.passed ? "PASS" : "FAIL")" }.joined(separator: ", "))
        }
        if results.contains(where: { !$0.passed }) { throw ExitCode.failure }
    }

    private func reshard(to shards: Int) async throws {
        let liveline = workers.liveline ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("liveline").path
        var environment = ProcessInfo.processInfo.environment
        environment["LIVELINE_AMQP_URL"] = workers.amqpURL
        for stage in ["translate", "send"] {
            let status = try await ChildProcess.start(
                liveline, arguments: ["reshard", stage, "--to", "\(shards)", "--quiet-seconds", "1", "--log-level", "warning"],
                environment: environment
            ).exited()
            guard status == 0 else { throw BenchError("liveline reshard \(stage) --to \(shards) exited with \(status)") }
        }
    }

    private func run(_ fault: FaultCase) async throws -> CaseResult {
        // A short heartbeat, so a frozen broker is noticed in seconds rather than 30.
        let workerURL = workers.amqpURL + (workers.amqpURL.contains("?") ? "&" : "?") + "heartbeat=2"
        return try await Pipeline.with(
            executable: workers.liveline, amqpURL: workerURL, storeURL: fault.storeURL, label: "faults-\(fault.rawValue)",
            goAwayAfterStreams: fault == .goaway ? 250 : nil, settings: fault.settings,
            domains: fault == .killDuringFanOut ? FanOut.domains : BenchEvents.translatorConfiguration(), passed: \.passed
        ) { pipeline in
            let load = fault.load(long: long)
            try await load.registerDevices(in: pipeline)
            let fanOut = fault == .killDuringFanOut ? FanOut(devices: long ? 30_000 : 3_000, goals: 6) : nil
            try await fanOut?.register(in: pipeline)
            let apnsIDs = load.apnsIDs()
            for role in ["translator", "sender"] {
                for _ in 0..<fault.workersAtStart { try await pipeline.startWorker(role) }
            }
            let context = FaultContext(
                pipeline: pipeline, load: load, amqpURL: workers.amqpURL, brokerControl: brokerControl, fanOut: fanOut)
            let started = Date()
            let publishedAt = try await load.publish(
                amqpURL: workers.amqpURL, topology: pipeline.topology, progress: Progress(total: load.total, what: "published"),
                at: load.total / 3, during: { try await fault.disturb(context) })
            try await Drain.wait(for: pipeline, load: load, timeout: .seconds(180)) {
                try await Outcome.collect(pipeline: pipeline, load: load, publishedAt: publishedAt, apnsIDs: apnsIDs, duplicateBound: 0)
                    .ledger.verdict().lost.count
            }
            let extra = try await fault.check(context)
            // A graceful stop flushes the workers' traces, which the ledger reads.
            for worker in await pipeline.stopWorkers() { context.fail(worker.notStopped) }
            // Safe (what it held unacked is requeued), but worth a look in its log.
            for worker in pipeline.workers where worker.process.exitStatus == EXIT_FAILURE {
                context.note("\(worker.name) overran liveline.ops.drain-timeout-seconds after SIGTERM and exited; see its log")
            }
            let outcome = try await Outcome.collect(
                pipeline: pipeline, load: load, publishedAt: publishedAt, apnsIDs: apnsIDs,
                duplicateBound: context.duplicateBound)
            var order = OrderCheck(of: load, at: pipeline.simulator, apnsIDs: apnsIDs)
            var fanOutVerdict: Verdict?
            if let fanOut {
                let fanOutLedger = try await fanOut.ledger(pipeline: pipeline, duplicateBound: context.fanOutDuplicateBound)
                fanOutVerdict = fanOutLedger.verdict
                order = order + fanOutLedger.order
            }
            return CaseResult(
                name: fault.rawValue, what: fault.summary, seconds: Date().timeIntervalSince(started),
                notes: context.notes + extra.notes, extraPassed: extra.passed && !context.failed, ledger: outcome.ledger.verdict(),
                fanOut: fanOutVerdict, order: order)
        }
    }

    struct CaseResult: Codable, Sendable {
        var name: String
        var what: String
        var seconds: Double
        var notes: [String]
        var extraPassed: Bool
        var ledger: Verdict
        /// The game's (goal, device) pushes, for the fan-out case.
        var fanOut: Verdict?
        /// At every device, the steady load's and the game's.
        var order: OrderCheck

        var passed: Bool { ledger.passed && (fanOut?.passed ?? true) && order.passed && extraPassed }

        var text: String {
            var lines = ["== \(name): \(what) (\(String(format: "%.0f", seconds)) s)"] + notes.map { "  " + $0 } + [ledger.text]
            if let fanOut { lines += ["the game's fan-out, one entry per goal and device:", fanOut.text] }
            lines.append(order.text + (order.passed ? "" : ": FAIL"))
            return lines.joined(separator: "\n")
        }
    }
}

/// What a case may touch, and what it records for the ledger.
final class FaultContext: @unchecked Sendable {
    let pipeline: Pipeline
    let load: Load
    let amqpURL: String
    let brokerControl: String
    let fanOut: FanOut?
    private let lock = NSLock()
    private var _duplicateBound = 0
    private var _fanOutDuplicateBound = 0
    private var _notes: [String] = []
    private var _failed = false

    init(pipeline: Pipeline, load: Load, amqpURL: String, brokerControl: String, fanOut: FanOut?) {
        self.pipeline = pipeline
        self.load = load
        self.amqpURL = amqpURL
        self.brokerControl = brokerControl
        self.fanOut = fanOut
    }

    var duplicateBound: Int { lock.withLock { _duplicateBound } }
    var fanOutDuplicateBound: Int { lock.withLock { _fanOutDuplicateBound } }
    var notes: [String] { lock.withLock { _notes } }

    /// Duplicates this disturbance may cause, and why.
    func allowDuplicates(_ count: Int, because why: String) {
        lock.withLock {
            _duplicateBound += count
            _notes.append("duplicates allowed: \(count) (\(why))")
        }
    }

    /// Duplicates of the game's pushes this disturbance may cause, and why.
    func allowFanOutDuplicates(_ count: Int, because why: String) {
        lock.withLock {
            _fanOutDuplicateBound += count
            _notes.append("game's duplicates allowed: \(count) (\(why))")
        }
    }

    func note(_ text: String) { lock.withLock { _notes.append(text) } }

    /// Fails the case, whatever its ledger says, and says why.
    func fail(_ why: String) {
        lock.withLock {
            _failed = true
            _notes.append("FAIL: " + why)
        }
    }

    var failed: Bool { lock.withLock { _failed } }

    private var values: [String: Double] = [:]
    func record(_ name: String, _ value: Double) { lock.withLock { values[name] = value } }
    func recorded(_ name: String) -> Double? { lock.withLock { values[name] } }

    func worker(_ role: String) throws -> Worker {
        guard let worker = pipeline.workers.last(where: { $0.role == role && $0.process.isRunning }) else {
            throw BenchError("no running \(role)")
        }
        return worker
    }

    /// The running worker of `role` holding the most shards, and how many it holds.
    func workerHoldingMostShards(_ role: String) async throws -> (worker: Worker, shards: Int) {
        var best: (worker: Worker, shards: Int)?
        for worker in pipeline.workers where worker.role == role && worker.process.isRunning {
            let held = Int(try await worker.metrics(["liveline_shards_held"])[0])
            if held > best?.shards ?? -1 { best = (worker, held) }
        }
        guard let best else { throw BenchError("no running \(role)") }
        return best
    }

    /// Runs the broker's control script (`restart`, `pause`, ...).
    func broker(_ arguments: String...) async throws {
        try await run(brokerControl, arguments)
    }

    /// Runs the broker's control script and returns what it printed (standard output and
    /// error), or nil when it failed.
    func brokerOutput(_ arguments: String...) async throws -> String? {
        let file = pipeline.work.appendingPathComponent("broker-control-\(UUID().uuidString.prefix(8)).out").path
        let status = try await ChildProcess.start("/usr/bin/env", arguments: [brokerControl] + arguments, output: file).exited()
        let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: file)
        return status == 0 ? text : nil
    }

    /// Runs a control script (the broker's, the store's) and requires it to succeed.
    func run(_ script: String, _ arguments: String...) async throws {
        try await run(script, arguments)
    }

    private func run(_ script: String, _ arguments: [String]) async throws {
        let status = try await ChildProcess.run("/usr/bin/env", arguments: [script] + arguments)
        guard status == 0 else { throw BenchError("\(script) \(arguments.joined(separator: " ")) exited with \(status)") }
    }
}

/// The fault cases. Duplicate bounds come from the windows: a killed sender's unacked
/// deliveries (its prefetch, 1,000) may have reached APNs already and come again; a killed
/// translator's unacked events (its prefetch, 1,500) may have had their jobs published.
enum FaultCase: String, CaseIterable, ExpressibleByArgument, Sendable {
    case killSender = "kill-sender"
    case killTranslator = "kill-translator"
    case sigterm
    case brokerRestart = "broker-restart"
    case brokerFreeze = "broker-freeze"
    case memoryAlarm = "memory-alarm"
    case storeOutage = "store-outage"
    case apnsErrors = "apns-errors"
    case unregistered
    case expiredProviderToken = "expired-provider-token"
    case goaway
    case connectionResets = "connection-resets"
    case poison
    case badEvents = "bad-events"
    case dlqReplay = "dlq-replay"
    case killDuringFanOut = "kill-during-fan-out"
    case workerJoins = "worker-joins"
    case partition
    case partitionPause = "partition-pause"

    static let senderPrefetch = 1_000
    static let translatorPrefetch = 1_500
    /// Retry tiers of 1, 2 and 4 s instead of the default 5 s to 10 min, so a retried push
    /// or a poison message plays out in seconds (`liveline.retry.delays-seconds`).
    static let retryDelays = "1,2,4"

    /// The steady load a case runs under: the partitions take minutes, and three brokers
    /// replicating every message share the two cores, so those cases run longer and slower.
    func load(long: Bool) -> Load {
        needsCluster
            ? Load(activities: long ? 3_000 : 600, total: long ? 90_000 : 18_000, rate: long ? 500 : 200)
            : Load(activities: 100, total: long ? 60_000 : 3_000, rate: long ? 1_000 : 500)
    }

    /// The partitions run on the three-node cluster (`scripts/faults --cluster`).
    var needsCluster: Bool { self == .partition || self == .partitionPause }

    /// Shards per stage: the cases about workers sharing a stage, and the partitions, run
    /// as the deployments do, on 8; the rest on one, where one worker holds everything.
    var shards: Int { [.killDuringFanOut, .workerJoins, .partition, .partitionPause].contains(self) ? 8 : 1 }

    /// Translators and senders at the start: two of each on sharded stages, so a worker's
    /// loss or a node's moves shards between live workers; one where a worker joins.
    var workersAtStart: Int { shards > 1 && self != .workerJoins ? 2 : 1 }

    /// The workers' settings beyond the pipeline's own.
    var settings: [String: String] {
        ["LIVELINE_RETRY_DELAYS_SECONDS": Self.retryDelays,
         "LIVELINE_TRANSLATE_SHARDS": "\(shards)", "LIVELINE_SEND_SHARDS": "\(shards)"]
    }

    /// Partition rounds: in each, a node that leads neither work queue is cut off, then the
    /// leader of the first send shard, each for ``cutSeconds`` and healed.
    static func partitionRounds(long: Bool) -> Int { long ? 4 : 2 }
    static let cutSeconds = 10.0

    var summary: String {
        switch self {
        case .killSender: "kill -9 of the sender mid-flight, then a new sender"
        case .killTranslator: "kill -9 of the translator mid-batch, then a new translator"
        case .sigterm: "SIGTERM to the sender under load: it drains and sends nothing twice; then a new sender"
        case .brokerRestart: "the broker stopped and started under load"
        case .brokerFreeze: "the broker frozen (SIGSTOP) past the 2 s heartbeat for 8 s, then resumed"
        case .memoryAlarm: "the broker's memory alarm for 5 s: publishers blocked, then released"
        case .storeOutage: "PostgreSQL stopped for 10 s under load, then started"
        case .apnsErrors: "APNs answers 500 and 503 in a 2 s burst (10 %), and 429 twice to 10 devices"
        case .unregistered: "APNs answers 410 Unregistered for 10 devices: their tokens go, nothing more is sent to them"
        case .expiredProviderToken:
            "APNs answers 403 ExpiredProviderToken once, to a provider token minutes old: no new token (APNs allows one "
                + "refresh per 20 minutes), and the push is retried"
        case .goaway: "APNs sends GOAWAY on every connection after 250 streams, all through the run"
        case .connectionResets: "APNs resets connections mid-stream (1 % of requests for 2 s)"
        case .poison: "APNs answers 500 to one device, always: its pushes go through every retry tier to the dead-letter queue"
        case .badEvents: "a flood of bad events: malformed JSON, unknown domain, wrong types, oversize"
        case .dlqReplay:
            "APNs refuses every push of the load's last third (400 BadTopic: dead letters); then `liveline dlq replay` "
                + "sends each activity's newest again and skips the superseded"
        case .killDuringFanOut:
            "8 shards per stage, 2 translators and 2 senders; a game fanned out per device, goal after goal: kill -9 of a "
                + "translator as a goal is published, then of the sender holding the most shards mid-fan-out; new ones start"
        case .workerJoins:
            "8 shards per stage, 1 translator and 1 sender; a second of each joins under load and takes half the shards"
        case .partition:
            "a three-node quorum cluster, 8 shards per stage, 2 translators and 2 senders: a follower cut off, then the leader "
                + "of the first send shard, \(Int(Self.cutSeconds)) s each (shorter than net_ticktime), healed each time, "
                + "several rounds"
        case .partitionPause:
            "a three-node quorum cluster, 8 shards per stage, 2 translators and 2 senders: a node with workers connected to it "
                + "cut off for twice net_ticktime and more, so pause_minority stops it, then healed and its leaders rebalanced"
        }
    }

    func disturb(_ context: FaultContext) async throws {
        switch self {
        case .killSender:
            try await context.worker("sender").kill()
            context.allowDuplicates(Self.senderPrefetch, because: "the killed sender's unacked deliveries")
            try await context.pipeline.startWorker("sender")
        case .killTranslator:
            try await context.worker("translator").kill()
            context.allowDuplicates(Self.translatorPrefetch, because: "the killed translator's unacked events")
            try await context.pipeline.startWorker("translator")
        case .sigterm:
            let sender = try context.worker("sender")
            if await sender.stop() {
                context.note("the drained sender exited; duplicates allowed: 0")
            } else {
                context.fail(sender.notStopped)
            }
            try await context.pipeline.startWorker("sender")
        case .brokerRestart:
            context.allowDuplicates(
                Self.senderPrefetch + Self.translatorPrefetch, because: "deliveries unacked when the connections dropped")
            try await context.broker("restart")
        case .brokerFreeze:
            context.allowDuplicates(
                Self.senderPrefetch + Self.translatorPrefetch, because: "deliveries unacked when the heartbeat gave up")
            try await context.broker("pause")
            try await Task.sleep(for: .seconds(8))
            try await context.broker("resume")
        case .memoryAlarm:
            try await context.broker("alarm", "on")
            try await Task.sleep(for: .seconds(5))
            try await context.broker("alarm", "off")
        case .storeOutage:
            context.allowDuplicates(Self.translatorPrefetch, because: "events requeued while their transaction failed")
            try await context.run(Self.postgres.control, "stop")
            try await Task.sleep(for: .seconds(10))
            try await context.run(Self.postgres.control, "start")
        case .apnsErrors:
            let simulator = context.pipeline.simulator
            for activity in 0..<10 {
                simulator.injectFault(.tooManyRequests, forDevice: context.load.events.token(activity), times: 2)
            }
            simulator.injectRandomFaults([(.internalServerError, 0.05), (.serviceUnavailable, 0.05)])
            try await Task.sleep(for: .seconds(2))
            simulator.injectRandomFaults([])
            context.note("retried jobs wait in the 1 s (and, failing twice, 2 s) retry tier")
        case .unregistered:
            for activity in Self.goneDevices {
                context.pipeline.simulator.injectFault(.unregistered, forDevice: context.load.events.token(activity))
            }
        case .expiredProviderToken:
            context.record("tokens minted before", try await Self.providerTokens(context))
            context.pipeline.simulator.injectFault(.expiredProviderToken, forDevice: context.load.events.token(0), times: 1)
        case .goaway:
            break  // The simulator sends them from the start.
        case .connectionResets:
            let simulator = context.pipeline.simulator
            simulator.injectRandomFaults([(.resetConnection, 0.01)])
            try await Task.sleep(for: .seconds(2))
            simulator.injectRandomFaults([])
            // A reset loses the answers of every stream open on the connection; those
            // pushes may have arrived and are sent again.
            let resets = simulator.statistics.connectionsReset
            context.allowDuplicates(resets * Self.senderPrefetch, because: "\(resets) reset(s), each losing up to the sends in flight")
        case .poison:
            context.pipeline.simulator.injectFault(.internalServerError, forDevice: context.load.events.token(0))
        case .badEvents:
            try await BadEvents.publish(amqpURL: context.amqpURL)
        case .killDuringFanOut:
            try await Self.killDuringFanOut(context)
        case .workerJoins:
            for role in ["translator", "sender"] {
                let joined = ContinuousClock.now
                let newcomer = try await context.pipeline.startWorker(role)
                // Drain-then-release hands shards over without sending anything twice.
                while try await newcomer.metrics(["liveline_shards_held"])[0] == 0 {
                    guard ContinuousClock.now < joined + .seconds(30) else {
                        context.fail("\(newcomer.name) held no shard 30 s after it joined")
                        break
                    }
                    try await Task.sleep(for: .milliseconds(100))
                }
                context.note(String(format: "%@ joined and held its first shard after %.1f s", newcomer.name,
                                    (ContinuousClock.now - joined).seconds))
            }
        case .partitionPause:
            try await ClusterLeaders.check(context)
            try await Self.partitionPastTicktime(context)
        case .partition:
            try await ClusterLeaders.check(context)
            let rounds = Self.partitionRounds(long: context.load.total > 20_000)
            for round in 1...rounds {
                for target in ["follower", "leader"] {
                    // Workers connected to the node cut off lose their connection; what they
                    // had unacked comes again from the majority's copy.
                    context.allowDuplicates(
                        Self.senderPrefetch + Self.translatorPrefetch, because: "round \(round): the \(target) cut off")
                    try await context.broker("partition", target)
                    try await Task.sleep(for: .seconds(Self.cutSeconds))
                    try await context.broker("heal")
                }
            }
            context.note("\(rounds * 2) partitions, each healed until all three nodes saw each other again")
        case .dlqReplay:
            // The last third of the load: each activity's newest events become letters, so
            // the replay sends those and skips the older ones as superseded.
            try await Task.sleep(for: .seconds(Double(context.load.total) / 3 / Double(context.load.rate)))
            context.pipeline.simulator.injectRandomFaults([(.status(400, reason: "BadTopic"), 1.0)])
            try await Task.sleep(for: .seconds(Double(context.load.total) / 3 / Double(context.load.rate) + 1))
            context.pipeline.simulator.injectRandomFaults([])
        }
    }

    /// The PostgreSQL the store outage takes away: `scripts/faults` runs the suite under
    /// `scripts/with-postgres`, which sets both.
    static var postgres: (url: String, control: String) {
        let environment = ProcessInfo.processInfo.environment
        return (environment["LIVELINE_TEST_POSTGRES_URL"] ?? "", environment["LIVELINE_TEST_POSTGRES_CTL"] ?? "")
    }

    /// The store a case runs on: PostgreSQL for the outage, else a fresh SQLite file.
    var storeURL: String? { self == .storeOutage ? Self.postgres.url : nil }

    /// The devices the `unregistered` case makes go away.
    static let goneDevices = 10..<20

    /// Provider tokens the running senders minted so far.
    static func providerTokens(_ context: FaultContext) async throws -> Double {
        var minted = 0.0
        for worker in context.pipeline.workers where worker.role == "sender" && worker.process.isRunning {
            minted += try await worker.metrics(["liveline_apns_provider_tokens_total"])[0]
        }
        return minted
    }

    /// Checks beyond the ledger.
    func check(_ context: FaultContext) async throws -> (passed: Bool, notes: [String]) {
        switch self {
        case .unregistered:
            // One 410 per device, plus at most the jobs already queued for it when its token went.
            let answered = context.pipeline.simulator.statistics.responsesByStatus[410, default: 0]
            let bound = Self.goneDevices.count * 3
            return ((Self.goneDevices.count...bound).contains(answered),
                    ["410 answers: \(answered) for \(Self.goneDevices.count) devices (expected \(Self.goneDevices.count) to \(bound))"])
        case .expiredProviderToken:
            // One refresh for a token past the floor is ProviderTokenTests' case, on a test clock.
            let minted = try await Self.providerTokens(context) - (context.recorded("tokens minted before") ?? 0)
            return (minted == 0, ["provider tokens minted after the 403: \(Int(minted)) (expected 0 inside the 20-minute floor)"])
        case .goaway:
            let sent = context.pipeline.simulator.statistics.goAwaysSent
            return (sent >= 5, ["GOAWAYs sent: \(sent) (each connection drained and replaced)"])
        case .badEvents:
            break
        case .dlqReplay:
            return try await DeadLetterReplay.check(context)
        case .workerJoins, .killDuringFanOut:
            return try await Self.shardsShared(context)
        case .partition, .partitionPause:
            // Each worker tries another node first (Pipeline.rotated), so every node has
            // clients: a cut that never touched a connection would prove nothing about failing over.
            var reconnects = 0.0
            for worker in context.pipeline.workers where worker.process.isRunning {
                reconnects += try await worker.metrics(["liveline_amqp_reconnects_total"])[0]
            }
            return (reconnects >= 1, ["the workers' AMQP connections reconnected \(Int(reconnects)) time(s) (at least 1 expected)"])
        case .poison:
            // Its newest push must end `retries-exhausted` after the first try and every tier.
            let activity = context.load.events.activityId(0)
            let letters = try await context.pipeline.withStore {
                try await $0.deadLetters(matching: DeadLetterFilter(activityID: activity), limit: 1_000)
            }
            let tries = Self.retryDelays.split(separator: ",").count + 1
            let exhausted = letters.filter { $0.reason == "retries-exhausted" }
            return (!exhausted.isEmpty && exhausted.allSatisfy { $0.attempts == tries },
                    ["\(activity): \(exhausted.count) letter(s) retries-exhausted after \(exhausted.map(\.attempts)) attempt(s) "
                        + "(expected \(tries)); \(letters.count - exhausted.count) other letter(s)"])
        default:
            return (true, [])
        }
        let expected = BadEvents.expectedReasons
        // The keeper stores dead letters shortly after the translator publishes them.
        let deadline = ContinuousClock.now + .seconds(30)
        var counts: [String: Int] = [:]
        repeat {
            counts = try await context.pipeline.withStore { try await $0.deadLetterCounts(matching: DeadLetterFilter()) }
            if counts == expected { break }
            try await Task.sleep(for: .milliseconds(250))
        } while ContinuousClock.now < deadline
        let text = counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        return (counts == expected, ["dead letters kept: \(text); expected " + expected.sorted { $0.key < $1.key }
            .map { "\($0.value) \($0.key)" }.joined(separator: ", ")])
    }
}

/// Events a broken producer might send, each of which must become a dead letter with its
/// reason, while the good events keep flowing.
enum BadEvents {
    static let eachKind = 25

    static var expectedReasons: [String: Int] {
        [DeadLetterReason.invalidEvent.rawValue: eachKind * 3, DeadLetterReason.schemaMismatch.rawValue: eachKind]
    }

    static func publish(amqpURL: String) async throws {
        let connection = try await AMQPConnection.connect(try AMQPConfiguration(url: amqpURL))
        let publisher = EventPublisher(connection: connection, source: "//liveline-bench/bad")
        var messages: [AMQPMessage] = []
        for index in 0..<eachKind {
            // Malformed JSON: cut off mid-object.
            var truncated = try publisher.message(for: .generic(
                domain: "ride", activityId: "bad-json-\(index)", userId: "u-bad", status: "driverAssigned", contentState: .object([:])))
            truncated.body = truncated.body.prefix(truncated.body.count / 2)
            messages.append(truncated)
            // A domain no one configured.
            messages.append(try publisher.message(for: .generic(
                domain: "parcel", activityId: "bad-domain-\(index)", userId: "u-bad", status: "moving", contentState: .object([:]))))
            // A ride whose content-state has the wrong types.
            messages.append(try publisher.message(for: .generic(
                domain: "ride", activityId: "bad-types-\(index)", userId: "u-bad", status: "driverAssigned",
                contentState: .object([
                    "status": .string("driverAssigned"), "driverName": .integer(7), "etaStartSeconds": .string("soon"),
                ]))))
            // Larger than the translator accepts (64 KiB).
            messages.append(try publisher.message(for: .generic(
                domain: "ride", activityId: "bad-size-\(index)", userId: "u-bad", status: "driverAssigned",
                contentState: .object([:]), message: String(repeating: "x", count: 70_000))))
        }
        try await publisher.connection.publish(contentsOf: messages)
        await connection.close()
    }
}

/// The replay case's second half: once the keeper holds every refused push, `liveline dlq
/// replay` (the command on-call runs) sends them again; each letter must end replayed or
/// skipped with its reason, and the ledger then shows what reached the devices.
enum DeadLetterReplay {
    static func check(_ context: FaultContext) async throws -> (passed: Bool, notes: [String]) {
        let pipeline = context.pipeline
        let refused = pipeline.simulator.statistics.responsesByStatus[400, default: 0]
        var kept = 0
        let deadline = ContinuousClock.now + .seconds(30)
        repeat {
            kept = try await pipeline.withStore { try await $0.deadLetterCounts(matching: DeadLetterFilter()) }.values.reduce(0, +)
            if kept >= refused { break }
            try await Task.sleep(for: .milliseconds(250))
        } while ContinuousClock.now < deadline
        let status = try await pipeline.command(["dlq", "replay", "--reason", "BadTopic", "--yes"], name: "dlq-replay")
        try await Drain.wait(for: pipeline, load: context.load, timeout: .seconds(120))
        let states = try await pipeline.withStore { store in
            try await [DeadLetterState.pending, .replayed, .skipped].asyncMap { state in
                (state, try await store.deadLetterCounts(matching: DeadLetterFilter(state: state)).values.reduce(0, +))
            }
        }
        let count = Dictionary(uniqueKeysWithValues: states)
        let notes = [
            "APNs refused \(refused) push(es); the keeper kept \(kept) letter(s)",
            "liveline dlq replay exited \(status): \(count[.replayed] ?? 0) replayed, \(count[.skipped] ?? 0) skipped with "
                + "their reason, \(count[.pending] ?? 0) still pending",
        ]
        // Each activity's newest letter is sent again; the older ones are superseded.
        let passed = status == 0 && refused > 0 && kept == refused && count[.pending] == 0
            && (count[.replayed] ?? 0) + (count[.skipped] ?? 0) == kept && (count[.replayed] ?? 0) >= context.load.activities
        return (passed, notes)
    }
}
