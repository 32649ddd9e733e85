import APNsSimulator
import ArgumentParser
import AsyncHTTPClient
import Foundation
import LivelineChildProcess
import NIOCore
import NIOSSL
import Synchronization

// Tests: scripts/bench-smoke

/// A push the simulator answered 200, as a benchmark matches it to its event.
struct Receipt: Sendable {
    var apnsID: String
    /// Seconds since 1970.
    var receivedAt: Double
}

/// Where the pipeline's pushes land, as the benchmarks read them.
protocol PushReceiver: Sendable {
    /// Device pushes answered 200 so far.
    func answered() async throws -> Int
    /// What each device received, in arrival order.
    func receipts(toDevices tokens: [String]) async throws -> [[Receipt]]
}

/// Where the benchmark's APNs simulator runs.
enum SimulatorPlacement: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// `liveline apns-sim` in a process of its own, as APNs is another machine for users: the
    /// workers' figures are then theirs alone, and the simulator's CPU is a row of its own.
    case process
    /// In the benchmark's process: needed to inject faults, and to look at the parts.
    case inProcess = "in-process"
}

extension APNsSimulator: PushReceiver {
    func answered() async throws -> Int { statistics.responsesByStatus[200] ?? 0 }

    func receipts(toDevices tokens: [String]) async throws -> [[Receipt]] {
        tokens.map { token in
            deliveries(toDevice: token).map { Receipt(apnsID: $0.apnsID, receivedAt: $0.receivedAt.timeIntervalSince1970) }
        }
    }
}

/// `liveline apns-sim` as a child process, read over its own HTTP/2 and TLS: the counters
/// from `GET /_sim/stats`, and the receipts followed with a cursor through
/// `GET /_sim/receipts?from=N`, kept here per device.
final class SimulatorProcess: PushReceiver, @unchecked Sendable {
    let process: ChildProcess
    let port: Int
    private let client: HTTPClient
    private let base: String
    /// The receipts read so far, and how many: the next `from`. Only `refresh` writes them,
    /// and the benchmarks call it from one task at a time.
    private let read = Mutex<(byDevice: [String: [Receipt]], count: Int)>(([:], 0))

    private init(process: ChildProcess, port: Int, client: HTTPClient) {
        self.process = process
        self.port = port
        self.client = client
        base = "https://127.0.0.1:\(port)"
    }

    var pid: Int32 { process.pid }

    /// Starts `liveline apns-sim` on a free loopback port, trusting `publicKeyPEM` for the
    /// workers' JWTs, and waits until it answers. Its certificate goes to `certificateFile`.
    static func start(
        executable: String, publicKeyPEM: String, keyID: String, teamID: String, work: URL, certificateFile: URL
    ) async throws -> SimulatorProcess {
        let keyFile = work.appendingPathComponent("apns-sim-key.pem")
        try publicKeyPEM.write(to: keyFile, atomically: true, encoding: .utf8)
        let port = try LoopbackPort.free()
        let process = try ChildProcess.start(
            executable,
            arguments: [
                "apns-sim", "--port", "\(port)", "--certificate-out", certificateFile.path,
                "--trusted-key", "\(keyID):\(teamID):\(keyFile.path)", "--log-level", "warning",
            ],
            environment: ProcessInfo.processInfo.environment, output: work.appendingPathComponent("apns-sim.log").path)
        let deadline = ContinuousClock.now + .seconds(30)
        while !FileManager.default.fileExists(atPath: certificateFile.path) {
            if let status = process.exitStatus {
                throw BenchError("liveline apns-sim exited with status \(status); see apns-sim.log in \(work.path)")
            }
            guard ContinuousClock.now < deadline else {
                _ = await process.terminate(grace: .seconds(5))
                throw BenchError("liveline apns-sim wrote no certificate within 30 s; see apns-sim.log in \(work.path)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(certificateFile.path)
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
        let simulator = SimulatorProcess(process: process, port: port, client: client)
        do {
            _ = try await simulator.answered()
        } catch {
            await simulator.stop()
            throw BenchError("liveline apns-sim does not answer on port \(port): \(error)")
        }
        return simulator
    }

    func answered() async throws -> Int {
        let body = try await get("/_sim/stats")
        struct Stats: Decodable { var responsesByStatus: [String: Int] }
        return try JSONDecoder().decode(Stats.self, from: Data(body.utf8)).responsesByStatus["200"] ?? 0
    }

    func receipts(toDevices tokens: [String]) async throws -> [[Receipt]] {
        try await refresh()
        return read.withLock { read in tokens.map { read.byDevice[$0] ?? [] } }
    }

    /// Reads the receipts that arrived since the last call, a page at a time.
    private func refresh() async throws {
        while true {
            let from = read.withLock { $0.count }
            let page = try await get("/_sim/receipts?from=\(from)")
            var added: [(token: Substring, receipt: Receipt)] = []
            for line in page.split(separator: "\n") {
                let fields = line.split(separator: " ")
                guard fields.count == 3, let microseconds = Double(fields[2]) else {
                    throw BenchError("liveline apns-sim sent a receipt line this benchmark cannot read: \(line)")
                }
                added.append((fields[0], Receipt(apnsID: String(fields[1]), receivedAt: microseconds / 1e6)))
            }
            read.withLock { read in
                for (token, receipt) in added { read.byDevice[String(token), default: []].append(receipt) }
                read.count += added.count
            }
            if added.isEmpty { return }
        }
    }

    private func get(_ path: String) async throws -> String {
        let response = try await client.execute(HTTPClientRequest(url: base + path), timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 64 << 20)
        guard response.status == .ok else {
            throw BenchError("liveline apns-sim answered \(response.status.code) to GET \(path): \(String(buffer: body))")
        }
        return String(buffer: body)
    }

    /// SIGTERM, as an operator stops it, then the client.
    func stop() async {
        _ = await process.terminate(grace: .seconds(10))
        try? await client.shutdown()
    }
}
