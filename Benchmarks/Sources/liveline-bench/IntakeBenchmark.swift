import ArgumentParser
import AsyncHTTPClient
import Foundation
import LivelineAMQP
import LivelineAPI
import LivelineBenchSupport
import LivelineChildProcess
import LivelineCodecs
import LivelineMessaging
import LivelineProducer
import NIOCore

// Tests: scripts/bench

/// `liveline-bench intake`: events over HTTPS against events over AMQP, from this machine.
///
/// `liveline api` runs as a process of its own on SQLite; this process is the producer. In
/// alternating runs it sends N events one request each (`single`), N in batches
/// (`batch`), and N straight to the broker with the producer library, pipelined in the same
/// batches (`amqp`). Each run ends when every event is in the translate queue (counted,
/// then purged), and prints the rate and the CPU per event of the api, the broker and the
/// producer.
struct IntakeBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "intake",
        abstract: "Events over HTTPS (one a request, and batched) against the same events over AMQP.")

    @Option(help: "Broker URL.") var amqpURL = "amqp://guest:guest@127.0.0.1:5672/%2f"
    @Option(help: "The liveline executable (default: beside this one).") var liveline: String?
    @Option(help: "Events per run of each mode.") var events = 20_000
    @Option(help: "Events per batch (the batch and amqp modes).") var batch = 100
    @Option(help: "Requests (or AMQP batches) in flight at once.") var concurrency = 16
    @Option(help: "Rounds; each runs every mode once, in turn.") var rounds = 2
    @Option(help: "Modes, comma-separated: single, batch, amqp.") var modes = "single,batch,amqp"
    @Flag(help: "One JSON object per run on standard output.") var json = false

    func validate() throws {
        guard events >= 1, batch >= 1, concurrency >= 1, rounds >= 1 else {
            throw ValidationError("--events, --batch, --concurrency and --rounds must be at least 1")
        }
        let unknown = modes.split(separator: ",").filter { !["single", "batch", "amqp"].contains($0) }
        guard unknown.isEmpty else { throw ValidationError("unknown mode(s): \(unknown.joined(separator: ", "))") }
    }

    struct Run: Encodable {
        let mode: String
        let round: Int
        let events: Int
        let seconds: Double
        let eventsPerSecond: Double
        let apiMicrosecondsPerEvent: Double
        let brokerMicrosecondsPerEvent: Double
        let producerMicrosecondsPerEvent: Double
    }

    func run() async throws {
        let executable = liveline ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("liveline").path
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw BenchError("no liveline executable at \(executable); build it or pass --liveline")
        }
        guard let broker = BrokerUsage() else { throw BenchError("no local broker to measure (beam.smp)") }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("liveline-intake-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }

        let key = ProducerCredential.newKey()
        let producers = work.appendingPathComponent("producers.json")
        try #"{"producers": [{"name": "bench", "keySHA256": "\#(ProducerCredential.digest(ofKey: key))", "domains": ["ride"]}]}"#
            .write(to: producers, atomically: true, encoding: .utf8)
        let port = try LoopbackPort.free()
        var environment = ProcessInfo.processInfo.environment
        environment.merge([
            "LIVELINE_AMQP_URL": amqpURL, "LIVELINE_STORE_URL": "sqlite:\(work.path)/api.sqlite",
            "LIVELINE_API_PORT": "\(port)", "LIVELINE_API_PRODUCERS_FILE": producers.path,
            "LIVELINE_API_JWT_HS256_SECRET": "bench-secret-bench-secret-bench-secret",
            "LIVELINE_API_EVENTS_MAX_BATCH_EVENTS": "\(max(batch, 100))",
        ]) { $1 }
        let api = try ChildProcess.start(
            executable, arguments: ["api", "--log-level", "warning"], environment: environment,
            output: work.appendingPathComponent("api.log").path)
        do {
            try await connectAndMeasure(api: api, port: port, key: key, broker: broker)
        } catch {
            _ = await api.terminate(grace: .seconds(5))
            throw error
        }
        _ = await api.terminate(grace: .seconds(5))
    }

    private func connectAndMeasure(api: ChildProcess, port: Int, key: String, broker: BrokerUsage) async throws {
        var amqp = try AMQPConfiguration(url: amqpURL)
        amqp.connectionName = "bench-intake"
        let connection = try await AMQPConnection.connect(amqp)
        let topology = LivelineTopology()
        try await connection.declare(topology.amqp)
        let queue = topology.translate.queues[0]
        _ = try await connection.purge(queue: queue)
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: concurrency)
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            try await measure(api: api, port: port, key: key, broker: broker, http: http, connection: connection)
        } catch {
            try? await http.shutdown()
            await connection.close()
            throw error
        }
        try await http.shutdown()
        await connection.close()
    }

    private func measure(
        api: ChildProcess, port: Int, key: String, broker: BrokerUsage, http: HTTPClient, connection: AMQPConnection
    ) async throws {
        let topology = LivelineTopology()
        let queue = topology.translate.queues[0]
        try await Self.waitForHealth(http, port: port)

        if !json {
            print("\(events) events a run, \(batch) a batch, \(concurrency) in flight; api on SQLite; CPU in µs per event")
            print("  mode    round   events/s   api µs   broker µs   producer µs")
        }
        let publisher = EventPublisher(connection: connection, source: "//bench.liveline", topology: topology)
        var sequence = 0
        for round in 1...rounds {
            for mode in modes.split(separator: ",").map(String.init) {
                let batchOfEvents = try (0..<events).map { index in
                    sequence += 1
                    return try Self.event(sequence, activity: index % 1_000)
                }
                let before = (api: ProcessUsage.of(pid: api.pid)?.cpuSeconds ?? 0, broker: broker.cpuSeconds(), me: ProcessUsage.cpuSeconds())
                let started = ContinuousClock.now
                switch mode {
                case "single": try await send(batchOfEvents.map { [$0] }, http: http, port: port, key: key)
                case "batch": try await send(stride(from: 0, to: events, by: batch).map { Array(batchOfEvents[$0..<min($0 + batch, events)]) }, http: http, port: port, key: key)
                default: try await publish(batchOfEvents, publisher: publisher)
                }
                try await Self.waitForQueue(connection, queue: queue, count: events)
                let elapsed = (ContinuousClock.now - started).seconds
                let after = (api: ProcessUsage.of(pid: api.pid)?.cpuSeconds ?? 0, broker: broker.cpuSeconds(), me: ProcessUsage.cpuSeconds())
                _ = try await connection.purge(queue: queue)
                func perEvent(_ seconds: Double) -> Double { seconds / Double(events) * 1e6 }
                let result = Run(
                    mode: mode, round: round, events: events, seconds: elapsed, eventsPerSecond: Double(events) / elapsed,
                    apiMicrosecondsPerEvent: perEvent(after.api - before.api), brokerMicrosecondsPerEvent: perEvent(after.broker - before.broker),
                    producerMicrosecondsPerEvent: perEvent(after.me - before.me))
                if json {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.sortedKeys]
                    print(String(decoding: try encoder.encode(result), as: UTF8.self))
                } else {
                    print(String(
                        format: "  %@ %5d %10.0f %8.1f %11.1f %13.1f", mode.padding(toLength: 7, withPad: " ", startingAt: 0), round, result.eventsPerSecond,
                        result.apiMicrosecondsPerEvent, result.brokerMicrosecondsPerEvent, result.producerMicrosecondsPerEvent))
                }
            }
        }
        if !json, let usage = ProcessUsage.of(pid: api.pid) {
            print(String(format: "  api peak RSS %.1f MiB", usage.peakRSSMiB))
        }
    }

    /// One ride's state change; ids are unique across runs, so none is a duplicate.
    static func event(_ sequence: Int, activity: Int) throws -> LivelineEvent {
        let now = Date()
        let eta = Int(now.timeIntervalSince1970) + 600
        return LivelineEvent(
            id: "intake-\(sequence)", domain: "ride", name: "status", time: now.addingTimeInterval(Double(sequence) / 1000),
            data: .object([
                "activityId": .string("intake-r-\(activity)"), "userId": .string("u-\(activity)"),
                "contentState": .object([
                    "driverName": .string("Maria"), "driverPhoto": .string("car.fill"), "vehicleDescription": .string("White Toyota Camry"),
                    "etaStartSeconds": .integer(Int64(eta)), "etaEndSeconds": .integer(Int64(eta + 300)),
                    "status": .string("driverEnRoute"), "distanceRemaining": .double(3.2),
                ]),
            ]))
    }

    /// Posts each group as one request (one event in structured mode, more as a batch),
    /// `concurrency` at a time; every answer must be a 202.
    private func send(_ groups: [[LivelineEvent]], http: HTTPClient, port: Int, key: String) async throws {
        let bodies = try groups.map { group -> (Data, String) in
            if group.count == 1 { return (try group[0].encoded(source: "//bench.liveline"), "application/cloudevents+json") }
            let items = try group.map { try $0.encoded(source: "//bench.liveline") }
            return (Data("[".utf8) + items.joined(separator: Data(",".utf8)) + Data("]".utf8), "application/cloudevents-batch+json")
        }
        try await Self.inFlight(bodies.count, concurrency: concurrency) { index in
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/events")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: bodies[index].1)
            request.headers.add(name: "Authorization", value: "Bearer \(key)")
            request.body = .bytes(ByteBuffer(bytes: bodies[index].0))
            let response = try await http.execute(request, timeout: .seconds(60))
            let answer = try await response.body.collect(upTo: 1 << 20)
            guard response.status.code == 202 else {
                throw BenchError("POST /v1/events answered \(response.status.code): \(String(buffer: answer).prefix(300))")
            }
        }
    }

    private func publish(_ events: [LivelineEvent], publisher: EventPublisher) async throws {
        let groups = stride(from: 0, to: events.count, by: batch).map { Array(events[$0..<min($0 + batch, events.count)]) }
        try await Self.inFlight(groups.count, concurrency: concurrency) { index in
            try await publisher.publish(contentsOf: groups[index])
        }
    }

    /// Runs `work` for 0..<count, at most `concurrency` at once.
    private static func inFlight(_ count: Int, concurrency: Int, _ work: @escaping @Sendable (Int) async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = 0
            while next < min(concurrency, count) {
                let index = next
                group.addTask { try await work(index) }
                next += 1
            }
            while try await group.next() != nil, next < count {
                let index = next
                group.addTask { try await work(index) }
                next += 1
            }
            try await group.waitForAll()
        }
    }

    private static func waitForHealth(_ http: HTTPClient, port: Int) async throws {
        for _ in 0..<300 {
            if let response = try? await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/healthz"), timeout: .seconds(1)),
                response.status == .ok
            {
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw BenchError("liveline api did not answer /healthz on port \(port) within 30 s; see its log")
    }

    /// Every event of the run is in the translate queue: none was lost on the way.
    private static func waitForQueue(_ connection: AMQPConnection, queue: String, count: Int) async throws {
        for _ in 0..<600 {
            let depth = try await connection.messageCount(queue: queue)
            if depth >= count {
                guard depth == count else { throw BenchError("\(depth) messages in \(queue), \(count) sent: duplicates") }
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw BenchError("\(try await connection.messageCount(queue: queue)) of \(count) events reached \(queue) within 30 s")
    }
}
