import Foundation
import LivelineRuntime
import LivelineStore
import LivelineTestSupport
import NIOCore
import NIOPosix
import Prometheus
import Testing

/// Each role listens on a port of its own by default, and a port it cannot take stops it with
/// one line naming the setting, not an errno from a socket call.
struct ListeningPortTests {
    /// A loopback port another listener holds, until the returned channel is closed.
    static func heldPort() async throws -> (channel: any Channel, port: Int) {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        return (channel, try #require(channel.localAddress?.port))
    }

    @Test func aTranslatorAndASenderHaveOpsPortsOfTheirOwn() {
        #expect(LivelineRole.translator.defaultOpsPort == 9090)
        #expect(LivelineRole.sender.defaultOpsPort == 9091)
        // The api serves /metrics and /healthz on liveline.api.port.
        #expect(LivelineRole.api.defaultOpsPort == nil)
    }

    @Test func aTakenPortNamesItsSettingAndVariable() async throws {
        let held = try await Self.heldPort()
        defer { held.channel.close(promise: nil) }
        let error = await #expect(throws: PortError.self) {
            try await ListeningPort(host: "127.0.0.1", port: held.port, key: "liveline.ops.port").checkFree()
        }
        #expect(error?.description == "liveline.ops.port: port \(held.port) is already in use (LIVELINE_OPS_PORT)")
        // A free port passes, and leaves nothing bound behind: checked twice on one port. The port
        // is below Linux's ephemeral range (32768 up), where no other test's bind to port 0 or
        // outgoing connection can take it between the two checks, as one did to a released
        // ephemeral port on a CI machine.
        try await ListeningPort(host: "127.0.0.1", port: 0, key: "liveline.ops.port").checkFree()
        var free: Int?
        for port in 20_000..<20_100 where free == nil {
            if (try? await ListeningPort(host: "127.0.0.1", port: port, key: "liveline.ops.port").checkFree()) != nil {
                free = port
            }
        }
        let port = try #require(free, "a free port among 20000-20099")
        try await ListeningPort(host: "127.0.0.1", port: port, key: "liveline.ops.port").checkFree()
        try await ListeningPort(host: "127.0.0.1", port: port, key: "liveline.ops.port").checkFree()
    }

    /// The worker stops before it opens its store or waits for its broker: nothing else was
    /// started that would have to be stopped again, and on-call reads one line.
    @Test func aWorkerWhoseOpsPortIsTakenStopsAtStartSayingWhich() async throws {
        let keys = try APNsSettingsTests.Keys()
        let held = try await Self.heldPort()
        defer { held.channel.close(promise: nil) }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("never-\(UUID().uuidString)")
        for role in [LivelineRole.translator, .sender] {
            var environment = APNsSettingsTests.twoApps(keys)
            environment["LIVELINE_STORE_URL"] = "sqlite:\(directory.path)/liveline.sqlite"
            environment["LIVELINE_OPS_PORT"] = "\(held.port)"
            // No broker listens here; a worker that got this far would wait for one.
            environment["LIVELINE_AMQP_URL"] = "amqp://guest:guest@127.0.0.1:1/%2f"
            let config = try await LivelineSettings.reader(file: nil, environment: environment)
            let error = await #expect(throws: PortError.self, "\(role)") {
                try await runRole(role, config: config, registry: PrometheusCollectorRegistry(), logger: Broker.logger)
            }
            #expect(error?.description == "liveline.ops.port: port \(held.port) is already in use (LIVELINE_OPS_PORT)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path))
    }

    /// Taken between the check at start and the server's own bind, the port still ends the
    /// role with the same line, through the service that runs the server.
    @Test func theAPIsServerOnATakenPortEndsWithTheNamedError() async throws {
        let held = try await Self.heldPort()
        defer { held.channel.close(promise: nil) }
        let config = try await LivelineSettings.reader(file: nil, environment: [
            "LIVELINE_API_JWT_HS256_SECRET": "a-shared-secret-of-at-least-32-bytes!!", "LIVELINE_API_PORT": "\(held.port)",
        ])
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("api-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try SQLiteLivelineStore(configuration: .init(path: path))
        let graph = try await buildServices(
            role: .api, config: config, store: store, registry: PrometheusCollectorRegistry(), logger: Broker.logger, retry: nil)
        // The server is the api's last service, after the events' publisher that outlives it.
        let server = try #require(graph.services.last)
        let error = await #expect(throws: PortError.self) { try await server.run() }
        #expect(error?.description == "liveline.api.port: port \(held.port) is already in use (LIVELINE_API_PORT)")
    }
}
