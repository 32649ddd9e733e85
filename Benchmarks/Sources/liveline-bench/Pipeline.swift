import APNsSimulator
import AsyncHTTPClient
import Crypto
import Foundation
import LivelineMessaging
import LivelineAMQP
import LivelineBenchSupport
import LivelineChildProcess
import LivelineCore
import LivelineRuntime
import LivelineStore
import Logging
import NIOCore
import Synchronization

// Tests: scripts/bench-smoke, scripts/faults

/// Liveline as people run it, for the benchmarks and the fault suite: `liveline
/// translator` and `liveline sender` processes on a real broker and store, pushing to an
/// APNs simulator, with the key and the simulator's CA on disk as an operator would have
/// them. The simulator is `liveline apns-sim` in a process of its own, or in this process
/// where a fault is injected; either way every push can be matched to its event.
final class Pipeline: @unchecked Sendable {
    private let host: SimulatorHost
    let work: URL
    let executable: String
    let storeURL: String
    let amqpURL: String
    private(set) var workers: [Worker] = []
    private let environment: [String: String]
    private var nextOpsPort: Int

    private init(
        simulator: SimulatorHost, work: URL, executable: String, storeURL: String, amqpURL: String,
        environment: [String: String], opsPort: Int
    ) {
        host = simulator
        self.amqpURL = amqpURL
        self.work = work
        self.executable = executable
        self.storeURL = storeURL
        self.environment = environment
        nextOpsPort = opsPort
    }

    /// The topology the workers run, with the shard counts their settings give.
    var topology: LivelineTopology {
        LivelineTopology(
            translateShards: environment["LIVELINE_TRANSLATE_SHARDS"].flatMap(Int.init) ?? 1,
            sendShards: environment["LIVELINE_SEND_SHARDS"].flatMap(Int.init) ?? 1)
    }

    private enum SimulatorHost {
        case local(APNsSimulator)
        case process(SimulatorProcess)
    }

    /// The pushes as the simulator received them.
    var receiver: any PushReceiver {
        switch host {
        case .local(let local): local
        case .process(let process): process
        }
    }

    /// `liveline apns-sim`, when the simulator runs as a process.
    var simulatorProcess: SimulatorProcess? {
        if case .process(let process) = host { process } else { nil }
    }

    /// The simulator in this process, for injecting faults. Only pipelines started with
    /// `simulator: .inProcess` have one.
    var simulator: APNsSimulator {
        guard case .local(let local) = host else { preconditionFailure("this pipeline's simulator runs as liveline apns-sim") }
        return local
    }

    /// Every worker process this bench started, so an interrupted bench takes them along
    /// instead of leaving them consuming from the broker.
    private static let children = Mutex<Set<Int32>>([])
    // Set up once and never changed: the sources only need to stay alive.
    nonisolated(unsafe) private static let interruption: [any DispatchSourceSignal] = [SIGINT, SIGTERM].map { number in
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number)
        source.setEventHandler {
            for pid in children.withLock({ $0 }) { _ = kill(pid, SIGKILL) }
            exit(128 + number)
        }
        source.resume()
        return source
    }

    /// Starts the simulator and writes the key and CA. No worker runs yet.
    /// Without `storeURL`, the workers share a fresh SQLite file in the work directory. With
    /// `goAwayAfterStreams`, the simulator sends GOAWAY on every connection after that many.
    /// `settings` are more `LIVELINE_*` variables for the workers.
    static func start(
        executable: String?, amqpURL: String, storeURL: String?, label: String, simulator placement: SimulatorPlacement,
        goAwayAfterStreams: Int? = nil,
        settings: [String: String] = [:], domains: TranslatorConfiguration = BenchEvents.translatorConfiguration(),
        opsPort: Int = 19_090
    ) async throws -> Pipeline {
        let executable = executable ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("liveline").path
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw BenchError("no liveline executable at \(executable); build it or pass --liveline")
        }
        // Without a broker the workers would retry for minutes before the benchmark gave up.
        var probeLogger = Logger(label: "bench.probe")
        probeLogger.logLevel = .critical
        do {
            try await AMQPConnection.connect(try AMQPConfiguration(url: amqpURL), logger: probeLogger).close()
        } catch {
            throw BenchError("no broker answers at --amqp-url (\(error)); scripts/bench starts one on loopback")
        }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("liveline-\(label)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let storeURL = storeURL ?? "sqlite:" + work.appendingPathComponent("liveline.sqlite").path

        // APNs: a simulator that checks every JWT against the key.
        let key = P256.Signing.PrivateKey()
        try key.pemRepresentation.write(to: work.appendingPathComponent("key.p8"), atomically: true, encoding: .utf8)
        let simulator: SimulatorHost
        let simulatorPort: Int
        switch placement {
        case .inProcess:
            let local = try APNsSimulator(configuration: .init(
                maximumConcurrentStreams: 1000,
                trustedKeys: [.init(keyID: "BENCHKEY01", teamID: "BENCHTEAM1", publicKeyPEM: key.publicKey.pemRepresentation)],
                goAwayAfterStreams: goAwayAfterStreams, goAwayConnectionLimit: nil))
            simulatorPort = try await local.start()
            try local.certificatePEM.write(to: work.appendingPathComponent("ca.pem"), atomically: true, encoding: .utf8)
            simulator = .local(local)
        case .process:
            guard goAwayAfterStreams == nil else { throw BenchError("GOAWAY after N streams needs the simulator in this process") }
            let process = try await SimulatorProcess.start(
                executable: executable, publicKeyPEM: key.publicKey.pemRepresentation, keyID: "BENCHKEY01",
                teamID: "BENCHTEAM1", work: work, certificateFile: work.appendingPathComponent("ca.pem"))
            _ = Self.interruption
            Self.children.withLock { _ = $0.insert(process.pid) }
            simulatorPort = process.port
            simulator = .process(process)
        }

        var environment = ProcessInfo.processInfo.environment
        environment["LIVELINE_AMQP_URL"] = amqpURL
        environment["LIVELINE_STORE_URL"] = storeURL
        environment["LIVELINE_OPS_HOST"] = "127.0.0.1"
        environment["LIVELINE_APPS"] = "bench"
        environment["LIVELINE_APP_BENCH_BUNDLE_ID"] = "com.example.liveline"
        environment["LIVELINE_APP_BENCH_TEAM_ID"] = "BENCHTEAM1"
        environment["LIVELINE_APP_BENCH_KEY_ID"] = "BENCHKEY01"
        environment["LIVELINE_APP_BENCH_KEY_FILE"] = work.appendingPathComponent("key.p8").path
        environment["LIVELINE_APNS_ENDPOINT"] = "127.0.0.1:\(simulatorPort)"
        environment["LIVELINE_APNS_CA_FILE"] = work.appendingPathComponent("ca.pem").path
        let domainsFile = work.appendingPathComponent("domains.json")
        try JSONEncoder().encode(domains).write(to: domainsFile)
        environment["LIVELINE_TRANSLATOR_DOMAINS_FILE"] = domainsFile.path
        environment.merge(settings) { $1 }
        return Pipeline(
            simulator: simulator, work: work, executable: executable, storeURL: storeURL, amqpURL: amqpURL,
            environment: environment, opsPort: opsPort)
    }

    /// Starts a pipeline, runs `body` on it and stops it. The work directory (the workers'
    /// logs, the SQLite store) stays for a look when `body` throws or did not pass.
    static func with<T>(
        executable: String?, amqpURL: String, storeURL: String?, label: String,
        simulator placement: SimulatorPlacement = .inProcess, goAwayAfterStreams: Int? = nil,
        settings: [String: String] = [:], domains: TranslatorConfiguration = BenchEvents.translatorConfiguration(),
        passed: (T) -> Bool, _ body: (Pipeline) async throws -> T
    ) async throws -> T {
        let pipeline = try await start(
            executable: executable, amqpURL: amqpURL, storeURL: storeURL, label: label, simulator: placement,
            goAwayAfterStreams: goAwayAfterStreams, settings: settings, domains: domains)
        let result: T
        do {
            result = try await body(pipeline)
        } catch {
            await pipeline.stop(keepLogs: true)
            Progress.line("\(label): \(error); the workers' logs stay in \(pipeline.work.path)")
            throw error
        }
        let ok = passed(result)
        await pipeline.stop(keepLogs: !ok)
        if !ok { Progress.line("\(label): failed; the workers' logs stay in \(pipeline.work.path)") }
        return result
    }

    /// Opens the store the workers share (migrating it first, as a worker would).
    func withStore<T: Sendable>(_ body: (any ActivityStore) async throws -> T) async throws -> T {
        var logger = Logger(label: "bench.store")
        logger.logLevel = .error
        return try await StoreLocation(url: storeURL).withStore(logger: logger, body)
    }

    /// Starts one worker process and waits until its `/readyz` says ready.
    @discardableResult
    func startWorker(_ role: String) async throws -> Worker {
        let index = workers.filter { $0.role == role }.count + 1
        let opsPort = try LoopbackPort.free(from: nextOpsPort)
        var environment = environment
        environment["LIVELINE_AMQP_URL"] = Self.rotated(amqpURL, by: workers.count)
        let worker = try Worker.start(
            role: role, name: "\(role)-\(index)", executable: executable, environment: environment,
            opsPort: opsPort, logDirectory: work)
        nextOpsPort = opsPort + 1
        _ = Self.interruption
        Self.children.withLock { _ = $0.insert(worker.pid) }
        workers.append(worker)
        try await worker.waitUntilReady(timeout: .seconds(120))
        return worker
    }

    /// A cluster URL (`amqp://u:p@a,b,c/vhost`) with its brokers rotated by `count`: each
    /// worker tries another node first, so their connections spread over the nodes as a
    /// load-balanced service would spread them. One broker's URL is returned as it is.
    static func rotated(_ url: String, by count: Int) -> String {
        guard let at = url.lastIndex(of: "@"), let slash = url[at...].firstIndex(of: "/") else { return url }
        let hosts = url[url.index(after: at)..<slash].split(separator: ",")
        guard hosts.count > 1 else { return url }
        let first = count % hosts.count
        let order = hosts[first...] + hosts[..<first]
        return String(url[...at]) + order.joined(separator: ",") + String(url[slash...])
    }

    /// Runs a one-shot `liveline` command (`dlq replay`, ...) with the workers' settings and
    /// returns its exit status; its output goes to `<name>.log` in the work directory.
    func command(_ arguments: [String], name: String) async throws -> Int32 {
        try await ChildProcess.start(
            executable, arguments: arguments, environment: environment, output: work.appendingPathComponent("\(name).log").path
        ).exited()
    }

    /// Stops every worker gracefully (SIGTERM, then waits): each drains and flushes its
    /// trace. Returns the workers that did not end within their grace and were killed.
    @discardableResult
    func stopWorkers() async -> [Worker] {
        var killed: [Worker] = []
        for worker in workers where await !worker.stop() { killed.append(worker) }
        return killed
    }

    /// Stops the workers and the simulator; keeps the logs if asked.
    func stop(keepLogs: Bool) async {
        await stopWorkers()
        switch host {
        case .local(let local): try? await local.stop()
        case .process(let process): await process.stop()
        }
        if !keepLogs { try? FileManager.default.removeItem(at: work) }
    }
}

/// A benchmark's own mistake or failure, printed as is.
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A `liveline` worker process with its ops port.
final class Worker: Sendable {
    let name: String
    let role: String
    let opsPort: Int
    let process: ChildProcess

    private init(name: String, role: String, opsPort: Int, process: ChildProcess) {
        self.name = name
        self.role = role
        self.opsPort = opsPort
        self.process = process
    }

    static func start(
        role: String, name: String, executable: String, environment: [String: String], opsPort: Int, logDirectory: URL
    ) throws -> Worker {
        var environment = environment
        environment["LIVELINE_OPS_PORT"] = "\(opsPort)"
        // Warnings by default (logging costs a benchmark CPU); LIVELINE_BENCH_WORKER_LOG_LEVEL=info
        // keeps the reconnects and shard handovers too, for a failed fault case's logs.
        let level = ProcessInfo.processInfo.environment["LIVELINE_BENCH_WORKER_LOG_LEVEL"] ?? "warning"
        let process = try ChildProcess.start(
            executable, arguments: [role, "--log-level", level], environment: environment,
            output: logDirectory.appendingPathComponent("\(name).log").path)
        return Worker(name: name, role: role, opsPort: opsPort, process: process)
    }

    var pid: Int32 { process.pid }

    func waitUntilReady(timeout: Duration) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let status = process.exitStatus {
                throw BenchError("\(name) exited with status \(status) before it was ready; see its log")
            }
            if (try? await get("/readyz").status) == 200 { return }
            try await Task.sleep(for: .milliseconds(250))
        }
        throw BenchError("\(name) was not ready within \(timeout)")
    }

    /// The sum of every sample of the metrics whose line starts with each prefix.
    func metrics(_ prefixes: [String]) async throws -> [Double] {
        let lines = try await get("/metrics").body.split(separator: "\n")
        return prefixes.map { prefix in
            lines.filter { $0.hasPrefix(prefix) }.compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }.reduce(0, +)
        }
    }

    /// SIGTERM (a graceful drain) and waits; SIGKILL after a minute. Returns whether the
    /// worker ended by itself: one that does not has a shutdown bug (see ``notStopped``).
    func stop() async -> Bool {
        await process.terminate(grace: .seconds(60))
    }

    /// What went wrong when ``stop()`` had to kill the worker.
    var notStopped: String { "\(name) did not end within a minute of SIGTERM, and was killed" }

    /// SIGKILL: the crash the fault suite stages.
    func kill() async {
        process.signal(SIGKILL)
        _ = await process.exited()
    }

    private func get(_ path: String) async throws -> (status: Int, body: String) {
        let response = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: "http://127.0.0.1:\(opsPort)\(path)"), timeout: .seconds(5))
        let body = try await response.body.collect(upTo: 4 << 20)
        return (Int(response.status.code), String(buffer: body))
    }
}
