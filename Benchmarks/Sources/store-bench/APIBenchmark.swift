import AsyncHTTPClient
import Foundation
import Hummingbird
import JWTKit
import LivelineAPI
import LivelineBenchSupport
import LivelineStore
import Logging
import NIOCore
import ServiceLifecycle

// Tests: scripts/bench-smoke

/// Token registrations per second through the api on loopback, SQLite behind it.
enum APIBenchmark {
    struct Claims: JWTPayload {
        var sub: SubjectClaim
        var exp: ExpirationClaim
        var iss: IssuerClaim
        var aud: AudienceClaim
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    static func run(_ options: BenchOptions) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("liveline-bench-api-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteLivelineStore(configuration: .init(path: directory.appendingPathComponent("api.sqlite").path))
        let secret = "bench-secret-bench-secret-bench-secret"
        let configuration = APIConfiguration(
            host: "127.0.0.1", port: 0,
            authentication: .init(key: .hs256Secret(secret), issuer: "bench", audience: "liveline"),
            // Throughput, not the limits: 200 users at thousands of requests a second are far
            // past any sensible per-user limit.
            limits: APILimits(userRequestsPerMinute: 1_000_000_000, appRequestsPerSecond: 1_000_000_000))
        var logger = Logger(label: "bench.api")
        logger.logLevel = .error
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let app = try await buildApplication(configuration: configuration, store: store, logger: logger) { channel in
            portContinuation.yield(channel.localAddress?.port ?? 0)
        }
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        let users = 200
        var jwts: [String] = []
        for user in 0..<users {
            jwts.append(try await keys.sign(Claims(
                sub: .init(value: "u-\(user)"), exp: .init(value: Date().addingTimeInterval(3600)),
                iss: .init(value: "bench"), aud: .init(value: ["liveline"]))))
        }
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let services = ServiceGroup(configuration: .init(services: [app], logger: logger))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await services.run() }
            var portIterator = ports.makeAsyncIterator()
            guard let port = await portIterator.next() else { return }
            let base = "http://127.0.0.1:\(port)"
            let cpuStarted = ProcessUsage.cpuSeconds()
            let (elapsed, failures) = try await load(
                client: client, base: base, jwts: jwts, requests: options.requests, concurrency: options.concurrency)
            print(String(
                format: "api: %.0f token registrations/s, %.0f per CPU-second of server and client together (%d requests, concurrency %d, %d failed)",
                Double(options.requests) / elapsed.seconds, Double(options.requests) / (ProcessUsage.cpuSeconds() - cpuStarted),
                options.requests, options.concurrency, failures))
            await services.triggerGracefulShutdown()
        }
        try await client.shutdown()
    }

    /// Bounded concurrency: `concurrency` workers share the request numbers.
    static func load(
        client: HTTPClient, base: String, jwts: [String], requests: Int, concurrency: Int
    ) async throws -> (Duration, Int) {
        let clock = ContinuousClock()
        let start = clock.now
        let failures = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<concurrency {
                group.addTask {
                    var failures = 0
                    for index in stride(from: worker, to: requests, by: concurrency) {
                        let user = index % jwts.count
                        var request = HTTPClientRequest(url: "\(base)/v1/activities/act-\(user)-\(index / 4)/tokens/device-\(index % 4)")
                        request.method = .PUT
                        request.headers.add(name: "authorization", value: "Bearer \(jwts[user])")
                        request.headers.add(name: "content-type", value: "application/json")
                        let token = String(format: "%064x", index)
                        request.body = .bytes(ByteBuffer(string: #"{"token":"\#(token)","domain":"ride","attributesType":"RideAttributes"}"#))
                        let response = try await client.execute(request, timeout: .seconds(30))
                        if response.status.code >= 300 { failures += 1 }
                        _ = try await response.body.collect(upTo: 64 * 1024)
                    }
                    return failures
                }
            }
            return try await group.reduce(0, +)
        }
        return (clock.now - start, failures)
    }
}
