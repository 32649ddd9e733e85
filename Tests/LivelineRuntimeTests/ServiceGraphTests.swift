import Foundation
import LivelineAMQP
import LivelineRuntime
import LivelineServices
import LivelineStore
import LivelineTestSupport
import Prometheus
import ServiceLifecycle
import Testing

/// `buildServices` is what `liveline translator|sender|api` run: each role's whole graph,
/// built here from settings alone, against the real broker and a SQLite store of its own.
@Suite(.timeLimit(.minutes(2)))
struct ServiceGraphTests {
    static func graph(
        _ role: LivelineRole, _ environment: [String: String] = [:], keys: APNsSettingsTests.Keys? = nil
    ) async throws -> (ServiceGraph, SQLiteLivelineStore) {
        var environment = environment
        environment["LIVELINE_AMQP_URL"] = Broker.url
        if let keys { environment.merge(APNsSettingsTests.twoApps(keys)) { current, _ in current } }
        let config = try await LivelineSettings.reader(file: nil, environment: environment)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("graph-\(UUID().uuidString).sqlite").path
        let store = try SQLiteLivelineStore(configuration: .init(path: path))
        let graph = try await buildServices(
            role: role, config: config, store: store, registry: PrometheusCollectorRegistry(), logger: Broker.logger, retry: nil)
        return (graph, store)
    }

    @Test func theTranslatorConsumesAndPublishesOnConnectionsOfItsOwn() async throws {
        let keys = try APNsSettingsTests.Keys()
        try await withBroker {
            let (graph, _) = try await Self.graph(.translator, keys: keys)
            #expect(graph.services.count == 3)
            #expect(graph.services[0] is TranslatorService)
            #expect(graph.services[1] is RetentionPruner)
            // ServiceLifecycle's log lines and errors name each service: by its type, not by
            // a reflection of the whole value (the translator's configuration and all).
            let names = graph.services.map { ServiceGroupConfiguration.ServiceConfiguration(named: $0).serviceName }
            #expect(names.prefix(2) == ["TranslatorService", "RetentionPruner"])
            #expect(names.allSatisfy { !$0.contains("(") && $0.utf8.count < 80 }, "\(names)")
            #expect(graph.brokers.map(\.name) == ["translator-in", "translator-out", "translator-balance"])
            #expect(graph.brokers.allSatisfy { $0.connection.state == .connected })
            // The standard configuration's score domain broadcasts on channels, which the
            // translator opens: it needs the apps' APNs clients too.
            #expect(graph.apns?.namedClients.isEmpty == false)
            await graph.shutdown()
            #expect(graph.brokers.allSatisfy { $0.connection.state == .closed })
        }
    }

    @Test func theSenderKeepsTheDeadLettersUnlessToldNotTo() async throws {
        let keys = try APNsSettingsTests.Keys()
        try await withBroker {
            let (graph, _) = try await Self.graph(.sender, keys: keys)
            #expect(graph.services.count == 5)
            #expect(graph.services[0] is SenderService)
            #expect(graph.services[1] is RetentionPruner)
            // The score domain's channels are the sender's to sweep once their games are over.
            #expect(graph.services[2] is ChannelSweeper)
            #expect(graph.services[3] is DeadLetterKeeper)
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
        #expect(graph.services.count == 1)
        #expect(graph.brokers.isEmpty)
        #expect(graph.apns == nil)
    }

    /// With outcomes on, the api also keeps them for `GET /v1/events/{id}`: its relay joins the
    /// graph (connecting only when it runs, so the api starts with the broker down).
    @Test func theAPIRelaysOutcomesWhenADomainReportsThem() async throws {
        let (graph, _) = try await Self.graph(.api, [
            "LIVELINE_API_JWT_HS256_SECRET": "a-shared-secret-of-at-least-32-bytes!!", "LIVELINE_OUTCOMES_DOMAINS": "ride",
        ])
        let names = graph.services.map { ServiceGroupConfiguration.ServiceConfiguration(named: $0).serviceName }
        #expect(graph.services.count == 2 && names.contains { $0.contains("OutcomeRelay") }, "\(names)")
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
