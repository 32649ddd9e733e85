import ArgumentParser
import Foundation
import LivelineAMQP
import LivelineBenchSupport
import LivelineCore
import LivelineMessaging
import LivelineServices
import Logging

// Tests: scripts/bench-smoke

/// `liveline-bench sender`: the shipped `liveline sender` process draining a full send
/// queue, each job for an activity and a device of its own, into the APNs simulator
/// (`liveline apns-sim` in a process of its own by default). It prints the rate from the
/// sender's start, the CPU per push of the sender, the broker and the simulator, and the
/// sender's memory as the drain goes: resident every `--sample-every` pushes, its peak, and
/// once idle after the drain. Memory that grows with the pushes drained is kept per activity
/// or per token somewhere.
struct SenderDrainBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sender",
        abstract: "Fill liveline.send with N jobs for distinct activities, then time `liveline sender` draining them.",
        discussion: "scripts/bench sender starts RabbitMQ (and PostgreSQL with --postgres) and runs this on a release build."
    )

    @OptionGroup var workers: WorkerOptions
    @Option(help: "Store URL the sender uses (default: a fresh SQLite file).") var storeURL: String?
    @Option(help: "Jobs to queue, each for its own activity and device.") var jobs = 100_000
    @Option(help: "Sample the sender's resident memory every this many pushes (default: a tenth of --jobs).")
    var sampleEvery: Int?
    @Option(help: "Seconds to wait for the drain.") var drainTimeout = 600
    @Option(help: "Where the APNs simulator runs: process (liveline apns-sim, as APNs is another machine) or in-process.")
    var simulator: SimulatorPlacement = .process
    @Flag(help: "Print the summary as JSON.") var json = false

    mutating func validate() throws {
        guard jobs >= 1 else { throw ValidationError("--jobs must be at least 1") }
        guard drainTimeout >= 1 else { throw ValidationError("--drain-timeout must be at least 1 (seconds)") }
        if let sampleEvery, sampleEvery < 1 { throw ValidationError("--sample-every must be at least 1") }
    }

    func run() async throws {
        let passed = try await Pipeline.with(
            executable: workers.liveline, amqpURL: workers.amqpURL, storeURL: storeURL, label: "sender",
            simulator: simulator, passed: { $0 }, measure)
        if !passed { throw ExitCode.failure }
    }

    private func measure(_ pipeline: Pipeline) async throws -> Bool {
        var logger = Logger(label: "bench.sender")
        logger.logLevel = .error
        let connection = try await AMQPConnection.connect(try AMQPConfiguration(url: workers.amqpURL), logger: logger)
        defer { Task { await connection.close() } }
        let topology = LivelineTopology()
        try await fill(connection, topology: topology)
        // Timed and metered from before the sender starts: it drains while its /readyz is still
        // being polled, so its start-up (a fraction of a second) counts against it.
        let meter = UsageMeter(broker: BrokerUsage())
        let before = meter.sample(pipeline)
        let started = ContinuousClock.now
        let sender = try await pipeline.startWorker("sender")
        // 20 ms between looks: the end is seen within a look, and 50 small requests a second
        // cost the simulator process next to nothing.
        let drain = try await QueueDrain(
            total: jobs, what: "pushes answered", every: sampleEvery ?? max(1, jobs / 10), timeout: drainTimeout,
            pause: .milliseconds(20)
        ).wait(for: sender, from: started, timedOut: { "\($0) of \(jobs) pushes answered within \(drainTimeout) s; see the sender's log" }) {
            try await pipeline.receiver.answered()
        }
        let after = meter.sample(pipeline)
        // What the sender keeps once it has nothing to do: its steady state after the drain.
        try await Task.sleep(for: .seconds(5))
        let idle = ProcessUsage.of(pid: sender.pid)?.rssMiB ?? 0
        let left = try await queued(connection, topology: topology)
        let summary = Summary(
            store: pipeline.storeURL.hasPrefix("sqlite:") ? "SQLite" : "PostgreSQL", jobs: jobs, seconds: drain.seconds,
            pushesPerSecond: Double(jobs) / drain.seconds, answered: try await pipeline.receiver.answered(), leftInQueues: left,
            processes: meter.usage(before: before, after: after, events: jobs),
            samples: drain.samples.map { .init(pushes: $0.done, rssMiB: $0.rssMiB) }, idleRSSMiB: idle)
        if json {
            try printJSON(summary)
        } else {
            print(summary.text)
        }
        return summary.answered == jobs && left == 0
    }

    /// Queues the jobs as the translator would: one update each, for its own ride and device.
    private func fill(_ connection: AMQPConnection, topology: LivelineTopology) async throws {
        try await connection.declare(topology.amqp)
        try await Load.requireEmpty([topology.sendQueues[0]], on: connection)
        let progress = Progress(total: jobs, what: "jobs queued")
        let now = EventTime(Date())
        var next = 0
        while next < jobs {
            let range = next..<min(jobs, next + 1_000)
            try await connection.publish(contentsOf: range.map { index in
                OutgoingMessage.job(Self.job(index, at: now), topology: topology, publishedAt: now)
            })
            next = range.upperBound
            progress.update(next)
        }
    }

    /// Jobs left in the send queue, a retry tier or the dead-letter queue.
    private func queued(_ connection: AMQPConnection, topology: LivelineTopology) async throws -> Int {
        var left = try await connection.messageCount(queue: topology.sendQueues[0])
        for tier in topology.retryTiers { left += try await connection.messageCount(queue: topology.retryQueue(tier)) }
        return left + (try await connection.messageCount(queue: topology.deadQueue))
    }

    /// Job `index`: a ride update for ride `bench-<index>` and a device token of its own.
    static func job(_ index: Int, at time: EventTime) -> PushJob {
        let token = String(format: "%064x", index + 1)
        let target = PushTarget.device(token: token, kind: .update)
        let eventID = "bench-sender-\(index)"
        let jobID = JobIdentity.jobId(eventId: eventID, target: target)
        let seconds = time.millisecondsSince1970 / 1000
        let payload = #"{"aps":{"timestamp":\#(seconds),"event":"update","content-state":{"status":"driverEnRoute","etaMinutes":\#(index % 30)},"stale-date":\#(seconds + 900)}}"#
        return PushJob(
            jobId: jobID, apnsId: JobIdentity.apnsId(jobId: jobID), activityId: "bench-\(index)", domain: "ride",
            eventId: eventID, eventTime: time, userId: "u-\(index)", attributesType: "RideAttributes", target: target,
            bundleId: "com.example.liveline", priority: .low, expiration: seconds + 900, event: .update,
            payload: Data(payload.utf8), isTerminal: false, sequence: time.millisecondsSince1970)
    }

    struct Summary: Codable, Sendable {
        struct Sample: Codable, Sendable {
            var pushes: Int
            var rssMiB: Double
        }

        var store: String
        var jobs: Int
        var seconds: Double
        var pushesPerSecond: Double
        var answered: Int
        /// Jobs still in the send queue, a retry tier or the dead-letter queue: 0 when all went.
        var leftInQueues: Int
        var processes: [UsageMeter.Usage]
        var samples: [Sample]
        var idleRSSMiB: Double

        var text: String {
            var lines = [
                "sender: \(jobs) jobs drained by one `liveline sender` (\(store)), each for its own activity and device",
                String(format: "  rate: %.0f pushes/s (%.2f s), %d answered 200, %d left in queues", pushesPerSecond, seconds,
                       answered, leftInQueues),
                "  process                       cpu s    µs/push   peak RSS    RSS now",
            ]
            lines += processes.map(\.row)
            lines.append("  sender RSS as it drained: " + samples.map { String(format: "%d: %.1f MiB", $0.pushes, $0.rssMiB) }
                .joined(separator: ", "))
            lines.append(String(format: "  sender RSS idle, 5 s after the drain: %.1f MiB", idleRSSMiB))
            return lines.joined(separator: "\n")
        }
    }
}
