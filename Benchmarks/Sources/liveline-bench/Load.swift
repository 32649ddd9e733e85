import Foundation
import LivelineAMQP
import LivelineBenchSupport
import LivelineCore
import LivelineMessaging
import LivelineProducer
import LivelineStore
import Logging

// Tests: scripts/bench-smoke, scripts/faults

/// A producer's steady stream for the end-to-end benchmark and the fault suite: the
/// ride, delivery and score mix of `BenchEvents` over `activities`, one device each,
/// published with confirms at `rate` events/s (0: flat out). A publish the broker refused
/// or never confirmed is published again, as a producer with confirms would, so every
/// event ends up confirmed; the time of its first attempt is its publish time.
///
/// At a rate, each event goes out once its time has come: every publish carries the
/// events that fell due while the one before awaited its confirms (one to a few at 1,000/s).
/// A `burst` instead holds events back and publishes that many at once, every
/// `burst / rate` seconds, as a producer batching its own sends would.
struct Load: Sendable {
    let events: BenchEvents
    let activities: Int
    let total: Int
    let rate: Int
    let burst: Int?
    /// Where the content (ETAs, windows) is anchored.
    let base = Date()

    init(activities: Int, total: Int, rate: Int, burst: Int? = nil) {
        events = BenchEvents(run: "r\(UUID().uuidString.prefix(6).lowercased())-")
        self.activities = activities
        self.total = total
        self.rate = rate
        self.burst = burst
    }

    /// One update token per activity, registered as the app would.
    func registerDevices(in pipeline: Pipeline) async throws {
        try await pipeline.withStore { store in
            for activity in 0..<activities {
                _ = try await store.registerUpdateToken(UpdateTokenRegistration(
                    activityID: events.activityId(activity), deviceID: "phone", userID: events.userId(activity),
                    token: events.token(activity), domain: BenchEvents.domain(of: activity),
                    attributesType: BenchEvents.attributesType(of: activity), at: Date()))
            }
        }
    }

    /// The ledger's view of the events: id, activity and place in the activity's stream.
    var ledgerEvents: [LossLedger.Event] {
        (0..<total).map { .init(id: events.eventId($0), activity: events.activityId($0 % activities), sequence: $0 / activities) }
    }

    /// The `apns-id` the sender gives each event's push: derived from the event id and the
    /// device, so the simulator's records map back to events exactly.
    func apnsIDs() -> [String: Int] {
        var ids: [String: Int] = [:]
        ids.reserveCapacity(total)
        for index in 0..<total {
            let target = PushTarget.device(token: events.token(index % activities), kind: .update)
            let jobID = JobIdentity.jobId(eventId: events.eventId(index), target: target)
            ids[JobIdentity.apnsId(jobId: jobID).uuidString.lowercased()] = index
        }
        return ids
    }

    /// Publishes every event; returns each one's publish time (seconds since 1970).
    /// `during` runs beside the publishing (a fault, for example) once `at` events are out.
    func publish(
        amqpURL: String, topology: LivelineTopology = LivelineTopology(), progress: Progress,
        at trigger: Int? = nil, during: (@Sendable () async throws -> Void)? = nil
    ) async throws -> [Double] {
        var logger = Logger(label: "bench.producer")
        logger.logLevel = .error
        let connection = try await AMQPConnection.connect(try AMQPConfiguration(url: amqpURL), logger: logger)
        defer { Task { await connection.close() } }
        // Declared here too, so a backlog can be published before any worker starts.
        try await connection.declare(topology.amqp)
        try await Self.requireEmpty(topology.translateQueues + topology.sendQueues, on: connection)
        let publisher = EventPublisher(connection: connection, source: "//liveline-bench", topology: topology)
        var publishedAt = [Double](repeating: 0, count: total)
        let clock = ContinuousClock()
        let started = clock.now
        /// At most this many events per publish, so one publish never holds the loop long.
        let most = 200
        var fault: Task<Void, any Error>?
        var lastTime: [Int: Date] = [:]
        var next = 0
        while next < total {
            if let trigger, let during, fault == nil, next >= trigger { fault = Task { try await during() } }
            let range = next..<min(total, next + chunkSize(after: next, elapsed: clock.now - started, most: most))
            let now = Date()
            let batch = try range.map { index in
                // Event times follow the clock, a millisecond apart at least within an
                // activity, so no job is stale on arrival and none ties with the one before.
                let activity = index % activities
                let time = max(now, (lastTime[activity] ?? .distantPast).addingTimeInterval(0.001))
                lastTime[activity] = time
                return try events.event(index, activities: activities, at: time, base: base)
            }
            for index in range { publishedAt[index] = now.timeIntervalSince1970 }
            try await publishConfirmed(batch, with: publisher)
            next = range.upperBound
            progress.update(next)
            if rate > 0, next < total {
                // The next publish starts when its first event (its last, for a burst) is due.
                let waitFor = burst.map { min(total, next + $0) - 1 } ?? next
                let due = started + .seconds(Double(waitFor) / Double(rate))
                if clock.now < due { try await Task.sleep(until: due) }
            }
        }
        try await fault?.value
        return publishedAt
    }

    /// How many events the publish starting at event `next` carries: flat out, `most`;
    /// in bursts, the burst; otherwise every event due by `elapsed`, at least one.
    private func chunkSize(after next: Int, elapsed: Duration, most: Int) -> Int {
        guard rate > 0 else { return most }
        if let burst { return burst }
        let due = Int(elapsed.seconds * Double(rate)) + 1
        return min(most, max(1, due - next))
    }

    /// Refuses to start on queues an earlier run left messages in.
    /// Takes every message waiting in the send shards and counts the jobs they carry (a
    /// bundle's count is in its `x-liveline-jobs` header): the translator bundles a batch's
    /// jobs for one shard, so messages are fewer than jobs.
    static func takeWaitingJobs(_ topology: LivelineTopology, on connection: AMQPConnection) async throws -> Int {
        var jobs = 0
        for queue in topology.sendQueues {
            var left = try await connection.messageCount(queue: queue)
            guard left > 0 else { continue }
            let consumer = try await connection.consume(queue: queue, prefetch: 1_000)
            while left > 0, let batch = try await consumer.nextBatch(maxSize: left, linger: .milliseconds(100)) {
                for delivery in batch {
                    jobs += delivery.properties.headers["x-liveline-jobs"]?.intValue.map { Int($0) } ?? 1
                    delivery.ack()
                }
                left -= batch.count
            }
            await consumer.close()
        }
        return jobs
    }

    static func requireEmpty(_ queues: [String], on connection: AMQPConnection) async throws {
        for queue in queues {
            let left = try await connection.messageCount(queue: queue)
            guard left == 0 else {
                throw BenchError("\(queue) holds \(left) message(s) from an earlier run, which would skew the figures: "
                    + "purge it, or start a fresh broker (scripts/rabbitmq stop; scripts/rabbitmq start fresh)")
            }
        }
    }

    /// Publishes until the broker confirmed every event, backing off while it is away.
    private func publishConfirmed(_ batch: [LivelineEvent], with publisher: EventPublisher) async throws {
        var pending = batch
        var delay = Duration.milliseconds(50)
        let deadline = ContinuousClock.now + .seconds(120)
        while !pending.isEmpty {
            do {
                try await publisher.publish(contentsOf: pending)
                pending = []
            } catch let error as AMQPPublishError {
                let failed = Set(error.failures.map(\.index))
                pending = pending.enumerated().filter { failed.contains($0.offset) }.map(\.element)
            } catch {
                // The connection is away (broker restarting): it reconnects by itself.
            }
            guard !pending.isEmpty else { return }
            guard ContinuousClock.now < deadline else {
                throw BenchError("the broker did not confirm \(pending.count) event(s) within 120 s")
            }
            try await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(2))
        }
    }
}

/// A progress bar on standard error, redrawn every 5 %.
final class Progress: @unchecked Sendable {
    private let total: Int
    private let what: String
    private var shown = -1

    init(total: Int, what: String) {
        self.total = total
        self.what = what
    }

    func update(_ done: Int) {
        let step = total == 0 ? 20 : min(20, done * 20 / total)
        guard step != shown else { return }
        shown = step
        Self.line("[" + String(repeating: "#", count: step) + String(repeating: ".", count: 20 - step) + "] \(done)/\(total) \(what)")
    }

    static func line(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}
