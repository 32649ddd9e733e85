import APNsSimulator
import Foundation
import LivelineChildProcess
import Logging
import NIOCore
import NIOHPACK
import NIOPosix
import Testing

@testable import LivelineAPNs

/// Both ends of Liveline's HTTP/2 against nghttp2's tools, an implementation Liveline did not write
/// (Debian's `nghttp2-client` and `nghttp2-server`; scripts/install-deps installs them). A missing
/// tool fails the test: skipping would let CI pass without the check.
@Suite("HTTP/2 interop with nghttp2 (h2load, nghttpd)", .serialized)
struct NGHTTP2InteropTests {
    @Test("h2load drives the simulator over TLS, 4 connections × 50 streams: every push answered 200")
    func h2loadAgainstSimulator() async throws {
        let h2load = try Tool.find("h2load", package: "nghttp2-client")
        let key = TestKey(teamID: "TEAM123456", keyID: "KEY1234567")
        let simulator = try APNsSimulator(configuration: APNsSimulatorConfiguration(trustedKeys: [key.trusted], recordDeliveries: false))
        let port = try await simulator.start()
        do {
            try await runH2load(h2load, port: port, key: key, simulator: simulator)
            try await simulator.stop()
        } catch {
            try? await simulator.stop()
            throw error
        }
    }

    private func runH2load(_ h2load: URL, port: Int, key: TestKey, simulator: APNsSimulator) async throws {
        let token = try APNsTokenSigner(teamID: key.teamID, keyID: key.keyID, privateKeyPEM: key.privateKeyPEM).currentToken()
        let directory = try Tool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bodyFile = directory.appendingPathComponent("push.json")
        try Data(liveActivityPayload()).write(to: bodyFile)
        let requests = 4_000
        let output = try await Tool.run(h2load, [
            "-c", "4", "-m", "50", "-n", "\(requests)", "-d", bodyFile.path,
            "-H", "authorization: bearer \(token.jwt)",
            "-H", "apns-push-type: liveactivity",
            "-H", "apns-topic: com.example.rides.push-type.liveactivity",
            "-H", "apns-priority: 10",
            "-H", "apns-expiration: 0",
            "https://127.0.0.1:\(port)/3/device/\(randomDeviceToken())",
        ])
        let summary = H2LoadSummary(output)
        print("h2load: \(summary.requestsLine ?? "?") | \(summary.rateLine ?? "?")")
        #expect(summary.succeeded == requests, "h2load: \(output)")
        #expect(summary.failed == 0 && summary.errored == 0, "h2load: \(output)")
        #expect(summary.status2xx == requests, "h2load: \(output)")
        #expect(simulator.statistics.responsesByStatus[200] == requests)
        #expect(simulator.statistics.maximumObservedConcurrentStreams > 1)
    }

    @Test("the client sends bodies larger than nghttpd's stream and connection windows; the echoes come back whole")
    func clientAgainstNghttpd() async throws {
        let nghttpd = try Tool.find("nghttpd", package: "nghttp2-server")
        let openssl = try Tool.find("openssl", package: "openssl")
        let directory = try Tool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("key.pem").path
        let certificateFile = directory.appendingPathComponent("cert.pem").path
        _ = try await Tool.run(openssl, [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", keyFile, "-out", certificateFile,
        ])
        // nghttpd cannot report a port it chose, so try free-looking ones until one binds.
        var server: ChildProcess?
        var port = 0
        for _ in 0..<10 {
            port = Int.random(in: 20_000...60_000)
            // Also: padding on every frame, trailers after each body, 5 streams at most, and a
            // 256-byte header table the client's encoder must shrink to.
            let process = try Tool.start(nghttpd, [
                "--address=127.0.0.1", "--echo-upload", "--window-bits=14", "--connection-window-bits=15", "--padding=255",
                "--trailer=x-echo: done", "--max-concurrent-streams=5", "--header-table-size=256", "\(port)", keyFile,
                certificateFile,
            ])
            if await Tool.waitForListener(port: port, process: process) {
                server = process
                break
            }
            process.signal(SIGTERM)
        }
        let nghttpdProcess = try #require(server, "nghttpd did not start")
        let listening = port
        defer { nghttpdProcess.signal(SIGTERM) }

        let pool = try HTTP2ConnectionPool(
            endpoint: APNsEndpoint(host: "127.0.0.1", port: port, trust: .pem(String(contentsOfFile: certificateFile, encoding: .utf8))),
            group: MultiThreadedEventLoopGroup.singleton,
            configuration: APNsConnectionPoolConfiguration(maximumConnections: 2),
            logger: Logger(label: "interop")
        )
        // 16 KiB stream and 32 KiB connection windows at nghttpd: each body needs its WINDOW_UPDATEs.
        let sizes = [1, 16_383, 16_384, 16_385, 40_000, 100_000, 250_000] + (0..<13).map { _ in Int.random(in: 20_000...120_000) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, size) in sizes.enumerated() {
                group.addTask {
                    var body = ByteBuffer()
                    for offset in 0..<size { body.writeInteger(UInt8(truncatingIfNeeded: offset &* 31 &+ index)) }
                    let headers = HPACKHeaders([
                        (":method", "POST"), (":scheme", "https"), (":path", "/upload/\(index)"), (":authority", "127.0.0.1:\(listening)"),
                        ("content-length", "\(size)"),
                    ])
                    let connection = try await pool.lease()
                    defer { pool.release(connection) }
                    let response = try await connection.execute(HTTP2Request(headers: headers, body: body))
                    #expect(response.status == 200, "body of \(size) bytes")
                    #expect(response.body == body, "echo of \(size) bytes: got \(response.body?.readableBytes ?? 0)")
                }
            }
            try await group.waitForAll()
        }
        await pool.shutdown()
    }
}

/// h2load's closing summary, e.g. "requests: 4000 total, 4000 started, 4000 done, 4000 succeeded,
/// 0 failed, 0 errored, 0 timeout" and "status codes: 4000 2xx, 0 3xx, 0 4xx, 0 5xx".
struct H2LoadSummary {
    var requestsLine: String?
    var rateLine: String?
    var succeeded: Int?
    var failed: Int?
    var errored: Int?
    var status2xx: Int?

    init(_ output: String) {
        for line in output.split(separator: "\n").map(String.init) {
            if line.hasPrefix("requests:") {
                requestsLine = line
                succeeded = Self.number(before: "succeeded", in: line)
                failed = Self.number(before: "failed", in: line)
                errored = Self.number(before: "errored", in: line)
            } else if line.hasPrefix("status codes:") {
                status2xx = Self.number(before: "2xx", in: line)
            } else if line.hasPrefix("finished in") {
                rateLine = line
            }
        }
    }

    static func number(before word: String, in line: String) -> Int? {
        let words = line.replacingOccurrences(of: ",", with: " ").split(separator: " ")
        guard let index = words.firstIndex(where: { $0 == word }), index > 0 else { return nil }
        return Int(words[index - 1])
    }
}

/// External programs for the interop tests.
enum Tool {
    struct Missing: Error, CustomStringConvertible {
        var description: String
    }

    static func find(_ name: String, package: String) throws -> URL {
        for directory in ["/usr/bin", "/usr/local/bin", "/usr/sbin", "/bin"] {
            let url = URL(fileURLWithPath: directory).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw Missing(description: "\(name) not found: install Debian's \(package) (scripts/install-deps does)")
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("liveline-h2-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func start(_ executable: URL, _ arguments: [String]) throws -> ChildProcess {
        try ChildProcess.start(executable.path, arguments: arguments, output: "/dev/null")
    }

    /// Runs to the end and returns standard output and error together.
    static func run(_ executable: URL, _ arguments: [String]) async throws -> String {
        let output = try temporaryDirectory().appendingPathComponent("output")
        defer { try? FileManager.default.removeItem(at: output.deletingLastPathComponent()) }
        _ = try await ChildProcess.start(executable.path, arguments: arguments, output: output.path).exited()
        return try String(contentsOf: output, encoding: .utf8)
    }

    /// Whether something accepts TCP connections on the port within a few seconds.
    static func waitForListener(port: Int, process: ChildProcess) async -> Bool {
        for _ in 0..<100 {
            guard process.isRunning else { return false }
            if let channel = try? await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: "127.0.0.1", port: port).get()
            {
                try? await channel.close()
                return true
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }
}
