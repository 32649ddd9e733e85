import Foundation
import LivelineAMQP
import LivelineMessaging
import LivelineRuntime
import LivelineServices
import LivelineStore
import LivelineTestSupport
import Prometheus
import ServiceLifecycle
import Testing

/// `buildServices` is what `liveline translator|sender|api` run: each role's whole graph,
/// built here from settings alone, with no broker (nothing is opened until the group runs),
/// and a SQLite store of its own; then run in a group against the real broker.
@Suite(.timeLimit(.minutes(2)))
struct ServiceGraphTests {
    /// Nothing listens on port 1: a graph that touched the broker while being built would fail.
    static let noBroker = "amqp://guest:guest@127.0.0.1:1/%2f"

    static func graph(
        _ role: LivelineRole, _ environment: [String: String] = [:], keys: APNsSettingsTests.Keys? = nil,
        retry: StartupRetry? = nil
    ) async throws -> (ServiceGraph, SQLiteLivelineStore) {
        var environment = environment
        environment["LIVELINE_AMQP_URL"] = environment["LIVELINE_AMQP_URL"] ?? noBroker
        environment["LIVELINE_OPS_PORT"] = environment["LIVELINE_OPS_PORT"] ?? "0"
        if let keys { environment.merge(APNsSettingsTests.twoApps(keys)) { current, _ in current } }
        let config = try await LivelineSettings.reader(file: nil, environment: environment)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("graph-\(UUID().uuidString).sqlite").path
        let store = try SQLiteLivelineStore(configuration: .init(path: path))
        let graph = try await buildServices(
            role: role, config: config, store: store, registry: PrometheusCollectorRegistry(), logger: Broker.logger, retry: retry)
        return (graph, store)
    }

    static func names(_ graph: ServiceGraph) -> [String] {
        graph.services.map { ServiceGroupConfiguration.ServiceConfiguration(named: $0).serviceName }
    }

    static func group(_ graph: ServiceGraph) -> ServiceGroup {
        ServiceGroup(configuration: .init(
            services: graph.services.map(ServiceGroupConfiguration.ServiceConfiguration.init(named:)), logger: Broker.logger))
    }

    /// Each connection and the APNs clients come before the services that use them: the group
    /// stops its services in reverse, so they close after those have drained.
    @Test func theTranslatorIsBuiltWithoutABrokerWhatItUsesListedFirst() async throws {
        let keys = try APNsSettingsTests.Keys()
        let (graph, _) = try await Self.graph(.translator, keys: keys)
        // ServiceLifecycle's log lines and errors name each service: by its type, not by
        // a reflection of the whole value (the translator's configuration and all).
        let names = Self.names(graph)
        #expect(names == [
            "ClosingService", "BrokerConnectionService", "BrokerConnectionService", "BrokerConnectionService",
            "TranslatorService", "RetentionPruner", "ListeningService",
        ])
        #expect(graph.brokers.map(\.name) == ["translator-in", "translator-out", "translator-balance"])
        #expect(graph.brokers.allSatisfy { $0.connection.state == .connecting }, "not opened")
        // The standard configuration's score domain broadcasts on channels, which the
        // translator opens: it needs the apps' APNs clients too.
        #expect(graph.apns?.namedClients.isEmpty == false)
        await graph.shutdown()
        #expect(graph.brokers.allSatisfy { $0.connection.state == .closed })
    }

    @Test func theSenderKeepsTheDeadLettersUnlessToldNotTo() async throws {
        let keys = try APNsSettingsTests.Keys()
        let (graph, _) = try await Self.graph(.sender, keys: keys)
        #expect(Self.names(graph) == [
            "ClosingService", "BrokerConnectionService", "BrokerConnectionService", "BrokerConnectionService",
            "BrokerConnectionService", "SenderService", "RetentionPruner",
            // The score domain's channels are the sender's to sweep once their games are over.
            "ChannelSweeper", "DeadLetterKeeper", "ListeningService",
        ])
        #expect(graph.brokers.map(\.name) == ["sender-in", "sender-out", "sender-balance", "dead-letter-keeper"])
        // Each of the two apps has a production and a sandbox client.
        #expect(graph.apns?.namedClients.count == 4)
        await graph.shutdown()
        #expect(graph.brokers.allSatisfy { $0.connection.state == .closed })

        let (withoutKeeper, _) = try await Self.graph(.sender, ["LIVELINE_KEEPER_ENABLED": "false"], keys: keys)
        #expect(!withoutKeeper.services.contains { $0 is DeadLetterKeeper })
        #expect(withoutKeeper.brokers.map(\.name) == ["sender-in", "sender-out", "sender-balance"])
        await withoutKeeper.shutdown()
    }

    /// Run in a group, the connections open with it; told to stop, the group stops the
    /// translator first and closes the connections after it.
    @Test func theTranslatorsGroupOpensItsConnectionsAndClosesThemLast() async throws {
        let keys = try APNsSettingsTests.Keys()
        try await LivelineExecutableTests.withVirtualHost { url in
            let (graph, _) = try await Self.graph(.translator, ["LIVELINE_AMQP_URL": url], keys: keys, retry: StartupRetry())
            let group = Self.group(graph)
            let failure = BackgroundFailure()
            let running = Task { try await failure.recording { try await group.run() } }
            try await eventually("every connection up", unless: failure) {
                graph.brokers.allSatisfy { $0.connection.state == .connected }
            }
            let control = try await AMQPConnection.connect(try AMQPConfiguration(url: url))
            // The translator declares the topology first, each quorum queue through its Raft
            // log, which a broker that every suite uses at once can take long over.
            try await eventually(timeout: .seconds(60), "the translator consuming its shard", unless: failure) {
                (try? await control.consumerCount(queue: LivelineTopology().translate.queue(0))) == 1
            }
            await control.close()
            await group.triggerGracefulShutdown()
            try await running.value
            #expect(graph.brokers.allSatisfy { $0.connection.state == .closed })
        }
    }

    /// A worker told to stop while its broker is still not up stops then, rather than once its
    /// connections' patience (five minutes) or its drain's timeout is spent.
    @Test func aWorkerToldToStopWhileItsBrokerIsNotUpStops() async throws {
        let keys = try APNsSettingsTests.Keys()
        let (graph, _) = try await Self.graph(.translator, keys: keys, retry: StartupRetry())
        let group = Self.group(graph)
        let running = Task { try await group.run() }
        try await Task.sleep(for: .milliseconds(300))
        #expect(graph.brokers.allSatisfy { $0.connection.state == .connecting }, "still waiting for the broker")
        await group.triggerGracefulShutdown()
        try await running.value
        #expect(graph.brokers.allSatisfy { $0.connection.state == .closed })
    }

    @Test func theTranslatorOfAChannelDomainWithoutAppsIsRefusedSayingWhy() async throws {
        let error = await #expect(throws: SettingsError.self) { _ = try await Self.graph(.translator) }
        #expect(error?.description.contains("broadcast on APNs channels") == true)
    }

    @Test func theSenderWithoutAppsIsRefusedNamingWhatIsMissing() async throws {
        let error = await #expect(throws: SettingsError.self) { _ = try await Self.graph(.sender) }
        #expect(error?.description.contains("LIVELINE_APPS") == true)
    }

    @Test func theAPIIsRefusedWithoutAKeyToCheckCallersWith() async throws {
        let error = await #expect(throws: SettingsError.self) { _ = try await Self.graph(.api) }
        #expect(error?.description.contains("LIVELINE_API_JWT_HS256_SECRET") == true)

        let (graph, _) = try await Self.graph(.api, ["LIVELINE_API_JWT_HS256_SECRET": "a-shared-secret-of-at-least-32-bytes!!"])
        #expect(Self.names(graph) == ["ClosingService", "ListeningService"], "the events' publisher, closed after the server")
        #expect(graph.brokers.isEmpty)
        #expect(graph.apns == nil)
    }

    /// With outcomes on, the api also keeps them for `GET /v1/events/{id}`: its relay joins the
    /// graph (connecting only when it runs, so the api starts with the broker down).
    @Test func theAPIRelaysOutcomesWhenADomainReportsThem() async throws {
        let (graph, _) = try await Self.graph(.api, [
            "LIVELINE_API_JWT_HS256_SECRET": "a-shared-secret-of-at-least-32-bytes!!", "LIVELINE_OUTCOMES_DOMAINS": "ride",
        ])
        let names = Self.names(graph)
        #expect(graph.services.count == 3 && names.contains { $0.contains("OutcomeRelay") }, "\(names)")
        #expect(graph.brokers.isEmpty)
    }

    /// Settings are checked before anything is opened: a misconfigured role fails at once,
    /// without creating a database or waiting for a PostgreSQL that is not up.
    @Test func aRoleIsRefusedBeforeItsStoreIsOpened() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("never-\(UUID().uuidString)")
        let config = try await LivelineSettings.reader(
            file: nil, environment: ["LIVELINE_STORE_URL": "sqlite:\(directory.path)/liveline.sqlite"])
        for role in [LivelineRole.api, .sender, .translator] {
            await #expect(throws: SettingsError.self, "\(role)") {
                try await runRole(role, config: config, registry: PrometheusCollectorRegistry(), logger: Broker.logger)
            }
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path))
    }
}
