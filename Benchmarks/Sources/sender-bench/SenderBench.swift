import APNsSimulator
import Crypto
import Foundation
import LivelineAMQP
import LivelineAPNs
import LivelineBenchSupport
import LivelineCore
import LivelineMessaging
import LivelineServices
import LivelineStore
import Logging
import Metrics
import Prometheus
import NIOPosix
import ServiceLifecycle

// Tests: scripts/bench-smoke

/// Fills a queue of its own with realistic push jobs and measures one `SenderService`
/// delivering them to an in-process `APNsSimulator`. Prints figures; asserts nothing.
@main
struct SenderBench {
    /// A key made for this run; the simulator trusts its public half.
    static let key = P256.Signing.PrivateKey()
    static var privateKeyPEM: String { key.pemRepresentation }
    static var publicKeyPEM: String { key.publicKey.pemRepresentation }
    static let bundleID = "com.example.rides"

    static func main() async throws {
        let options = BenchOptions.parseOrExit()
        let metrics = LatencyMetrics()
        MetricsSystem.bootstrap(
            options.prometheus
                ? MultiplexMetricsHandler(factories: [metrics, PrometheusMetricsFactory(registry: PrometheusCollectorRegistry())])
                : metrics)
        var logger = Logger(label: "sender-bench")
        logger.logLevel = .warning

        let simulator = try APNsSimulator(
            configuration: .init(
                trustedKeys: [.init(keyID: "BENCHKEY01", teamID: "BENCHTEAM1", publicKeyPEM: publicKeyPEM)],
                recordDeliveries: false, sendUniqueID: false
            ),
            // Its own event loop, apart from the client's: APNs is another machine, and a
            // profile then tells the two apart (thread NIO-ELT-…).
            eventLoopGroup: MultiThreadedEventLoopGroup(numberOfThreads: 1)
        )
        let port = try await simulator.start()
        let client = try APNsClient(
            configuration: .init(
                bundleID: bundleID, teamID: "BENCHTEAM1", keyID: "BENCHKEY01", privateKeyPEM: privateKeyPEM,
                endpoint: APNsEndpoint(host: "127.0.0.1", port: port, trust: .pem(simulator.certificatePEM)),
                pool: .init(maximumConnections: options.connections)
            ),
            logger: logger
        )
        let jobs = makeJobs(options.count)
        print("sender-bench: metrics \(options.prometheus ? "prometheus" : "minimal"), mode \(options.mode.rawValue), \(options.count) jobs of \(jobs[0].payload.count)-byte payloads, "
              + "in flight \(options.sendsInFlight), prefetch \(options.prefetch), \(options.connections) APNs connections")

        switch options.mode {
        case .apns:
            try await runAPNsOnly(jobs: jobs, client: client, options: options, metrics: metrics)
        case .amqp, .full:
            try await runThroughBroker(jobs: jobs, client: client, simulator: simulator, options: options, metrics: metrics, logger: logger)
        }
        await client.shutdown()
        try await simulator.stop()
        print(String(format: "peak RSS (VmHWM): %.0f MiB", ProcessUsage.peakRSSMebibytes()))
    }

    /// Realistic jobs: ~300-byte ride updates, each to its own device token.
    static func makeJobs(_ count: Int) -> [PushJob] {
        let now = Date()
        let seconds = Int64(now.timeIntervalSince1970)
        return (0..<count).map { index in
            let token = String(format: "%064x", index &* 2_654_435_761 &+ 0x5EED)
            let json = #"{"aps":{"timestamp":\#(seconds),"event":"update","content-state":{"driverName":"Ana Souza","driverPhoto":"https://cdn.example.com/d/ana.jpg","vehicleDescription":"Blue Honda Civic KX-4242","etaStartSeconds":\#(300 + index % 60),"etaEndSeconds":\#(420 + index % 60),"status":"enRoute","distanceRemaining":\#(1840 - index % 100)},"stale-date":\#(seconds + 900),"relevance-score":50}}"#
            let target = PushTarget.device(token: token, kind: .update)
            let eventID = "bench-\(index)"
            let jobID = JobIdentity.jobId(eventId: eventID, target: target)
            return PushJob(
                jobId: jobID, apnsId: JobIdentity.apnsId(jobId: jobID), activityId: "r-\(index)", domain: "ride",
                eventId: eventID, eventTime: EventTime(now), userId: "u-\(index)", attributesType: "RideAttributes",
                target: target, bundleId: bundleID, priority: index % 10 == 0 ? .high : .low,
                expiration: seconds + 900, event: .update, payload: Data(json.utf8), isTerminal: false,
                sequence: EventTime(now).millisecondsSince1970
            )
        }
    }

    /// The APNs client against the simulator alone, with the sender's concurrency.
    static func runAPNsOnly(jobs: [PushJob], client: APNsClient, options: BenchOptions, metrics: LatencyMetrics) async throws {
        let started = ContinuousClock.now
        let cpuStarted = ProcessUsage.cpuSeconds()
        let failures = await withTaskGroup(of: Int.self) { group in
            let workers = min(options.sendsInFlight, jobs.count)
            for worker in 0..<workers {
                group.addTask {
                    var failures = 0
                    var index = worker
                    while index < jobs.count {
                        let job = jobs[index]
                        index += workers
                        guard case .device(let token, _, _) = job.target else { continue }
                        let sent = ContinuousClock.now
                        do {
                            _ = try await client.send(
                                APNsLiveActivityPush(deviceToken: token, payload: Array(job.payload), priority: .low, apnsID: job.apnsId)
                            )
                        } catch {
                            failures += 1
                        }
                        let elapsed = (ContinuousClock.now - sent).components
                        metrics.record(nanoseconds: elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000)
                    }
                    return failures
                }
            }
            return await group.reduce(0, +)
        }
        report(count: jobs.count, elapsed: ContinuousClock.now - started, what: "APNs client → simulator", metrics: metrics)
        printCPU(since: cpuStarted, count: jobs.count, elapsed: ContinuousClock.now - started, what: "client and simulator")
        print("failures: \(failures)")
    }

    static func runThroughBroker(
        jobs: [PushJob], client: APNsClient, simulator: APNsSimulator, options: BenchOptions,
        metrics: LatencyMetrics, logger: Logger
    ) async throws {
        var configuration = try AMQPConfiguration(url: options.amqpURL)
        configuration.connectionName = "sender-bench"
        let control = try await AMQPConnection.connect(configuration, logger: logger)
        let consuming = try await AMQPConnection.connect(configuration, logger: logger)
        let publishing = try await AMQPConnection.connect(configuration, logger: logger)
        let topology = LivelineTopology(prefix: "bench.sender.\(UUID().uuidString.prefix(8).lowercased())")
        try await control.declare(topology.amqp)

        // Fill the queue before the sender starts, so the figure is the sender's alone.
        let fillStarted = ContinuousClock.now
        for batchStart in stride(from: 0, to: jobs.count, by: 2_000) {
            let batch = jobs[batchStart..<min(batchStart + 2_000, jobs.count)]
            try await control.publish(contentsOf: batch.map {
                AMQPMessage(exchange: topology.pushExchange, routingKey: topology.sendRoutingKey(shard: 0), body: $0.encoded(),
                            properties: AMQPProperties(contentType: "application/json", messageID: $0.jobId))
            })
        }
        report(count: jobs.count, elapsed: ContinuousClock.now - fillStarted, what: "fill (publish with confirms)", metrics: nil)

        if options.mode == .amqp {
            let started = ContinuousClock.now
            let consumer = try await consuming.consume(queue: topology.sendQueues[0], prefetch: options.prefetch)
            var received = 0
            for try await delivery in consumer {
                _ = try? PushJob(json: delivery.body)
                delivery.ack()
                received += 1
                if received == jobs.count { break }
            }
            report(count: received, elapsed: ContinuousClock.now - started, what: "consume + decode + ack", metrics: nil)
        } else {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sender-bench-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let store = try SQLiteLivelineStore(configuration: .init(path: directory.appendingPathComponent("store.sqlite").path))
            let sender = SenderService(
                consuming: consuming, publishing: publishing, clients: APNsClientDirectory([client]), store: store,
                settings: SenderSettings(topology: topology, prefetch: options.prefetch, maximumSendsInFlight: options.sendsInFlight),
                logger: logger
            )
            let group = ServiceGroup(configuration: .init(services: [.init(service: sender)], logger: logger))
            let started = ContinuousClock.now
            let cpuStarted = ProcessUsage.cpuSeconds()
            let broker = BrokerUsage()
            let brokerStarted = broker?.cpuSeconds() ?? 0
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                while metrics.finished.load(ordering: .relaxed) < jobs.count {
                    try await Task.sleep(for: .milliseconds(5))
                }
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
            }
            let elapsed = ContinuousClock.now - started
            await consuming.close()
            let left = try await control.messageCount(queue: topology.sendQueues[0])
            let dead = try await control.messageCount(queue: topology.deadQueue)
            report(count: jobs.count, elapsed: elapsed, what: "queue → sender → simulator, acked", metrics: metrics)
            printCPU(since: cpuStarted, count: jobs.count, elapsed: elapsed, what: "sender and simulator")
            if let broker {
                let brokerCPU = broker.cpuSeconds() - brokerStarted
                print(String(format: "CPU of the local broker meanwhile: %.2f s, %.1f µs per push, %.2f cores",
                             brokerCPU, brokerCPU / Double(jobs.count) * 1e6, brokerCPU / elapsed.secondsValue))
            }
            print("simulator 200s: \(simulator.statistics.responsesByStatus[200, default: 0]); left in queue after drain: \(left); dead letters: \(dead)")
        }
        for queue in [topology.sendQueues[0], topology.deadQueue] + topology.retryTiers.map(topology.retryQueue) {
            try? await control.delete(queue: queue)
        }
        for exchange in [topology.pushExchange, topology.retryExchange, topology.deadExchange, topology.eventsExchange] {
            try? await control.delete(exchange: exchange)
        }
        try? await control.delete(queue: topology.translateQueues[0])
        await consuming.close()
        await publishing.close()
        await control.close()
    }

    /// This process's CPU over the measured window: per push, and in cores.
    static func printCPU(since cpuStarted: Double, count: Int, elapsed: Duration, what: String) {
        let cpu = ProcessUsage.cpuSeconds() - cpuStarted
        print(String(format: "CPU of this process (%@): %.2f s, %.1f µs per push, %.2f cores",
                     what, cpu, cpu / Double(count) * 1e6, cpu / elapsed.secondsValue))
    }

    static func report(count: Int, elapsed: Duration, what: String, metrics: LatencyMetrics?) {
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        var line = String(format: "%@: %d in %.2f s = %.0f /s", what, count, seconds, Double(count) / seconds)
        if let metrics {
            let (p50, p99, maximum) = metrics.histogram.withLock {
                ($0.valueAtPercentile(50), $0.valueAtPercentile(99), $0.max)
            }
            line += String(format: "; send latency p50 %.2f ms, p99 %.2f ms, max %.2f ms",
                           Double(p50) / 1e6, Double(p99) / 1e6, Double(maximum) / 1e6)
        }
        print(line)
    }
}

extension Duration {
    var secondsValue: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
