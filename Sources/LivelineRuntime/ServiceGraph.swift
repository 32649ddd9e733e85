import Configuration
import Foundation
import Hummingbird
import LivelineAMQP
import LivelineAPI
import LivelineAPNs
import LivelineCore
import LivelineServices
import LivelineStore
import Logging
import Prometheus
import ServiceLifecycle

/// The long-running roles one `liveline` image plays; each scales on its own.
public enum LivelineRole: String, Sendable, CaseIterable {
    /// Domain events in, push jobs out.
    case translator
    /// Push jobs in, APNs requests out; keeps the dead letters too, unless told not to.
    case sender
    /// The HTTP api apps register their tokens with.
    case api
}

/// A role's services, wired and ready to run, and what to close once they have stopped.
public struct ServiceGraph: Sendable {
    /// Run these in one `ServiceGroup`.
    public var services: [any Service]
    /// The broker connections the services use, by name, as `/readyz` and the gauges know them.
    public var brokers: [(name: String, connection: AMQPConnection)]
    /// The APNs clients the services send through, if the role sends.
    public var apns: APNsClientDirectory?

    /// Opens a broker connection for the graph's services, which ``shutdown()`` closes.
    mutating func connect(_ name: String, _ settings: LivelineSettings, logger: Logger, retry: StartupRetry?) async throws -> AMQPConnection {
        let connection = try await LivelineRuntime.connect(settings.amqp, as: name, logger: logger, retry: retry)
        brokers.append((name, connection))
        return connection
    }

    /// Closes the broker connections and APNs clients, after the services stopped.
    public func shutdown() async {
        for broker in brokers { await broker.connection.close() }
        await apns?.shutdown()
    }
}

/// The composition root: every role's services, built from settings alone.
///
/// The executable only parses arguments and runs what this returns, so a test can build any
/// role's whole graph in memory, from an in-memory `ConfigReader` and a store of its own, and
/// look at what would run. Broker connections are opened here (with `retry`, a broker that is
/// not up yet is waited for); if building fails part way, what was opened is closed again.
public func buildServices(
    role: LivelineRole, config: ConfigReader, store: any ActivityStore, registry: PrometheusCollectorRegistry,
    logger: Logger, retry: StartupRetry? = StartupRetry()
) async throws -> ServiceGraph {
    try await buildServices(RoleSettings(role, config: config), store: store, registry: registry, logger: logger, retry: retry)
}

func buildServices(
    _ role: RoleSettings, store: any ActivityStore, registry: PrometheusCollectorRegistry, logger: Logger, retry: StartupRetry?
) async throws -> ServiceGraph {
    var graph = ServiceGraph(services: [], brokers: [], apns: nil)
    do {
        switch role.role {
        case .translator: try await buildTranslator(into: &graph, role, store: store, registry: registry, logger: logger, retry: retry)
        case .sender: try await buildSender(into: &graph, role, store: store, registry: registry, logger: logger, retry: retry)
        case .api:
            graph.services.append(
                try await buildApplication(configuration: role.api!, store: store, registry: registry, logger: logger))
        }
    } catch {
        await graph.shutdown()
        throw error
    }
    return graph
}

/// Opens the role's store, builds its graph, runs it until SIGTERM or SIGINT, then closes
/// everything it opened: what `liveline translator|sender|api` do.
public func runRole(_ role: LivelineRole, config: ConfigReader, registry: PrometheusCollectorRegistry, logger: Logger) async throws {
    // Every setting is read and checked before the store is opened, so a missing key or app
    // fails at once rather than after a PostgreSQL that is not up yet was waited for.
    let plan = try RoleSettings(role, config: config)
    let settings = plan.common
    if role == .api {
        logger.info("starting api", metadata: RuntimeLogKey.metadata([.store: "\(settings.store)", .port: "\(settings.api.port)"]))
    }
    try await settings.store.withStore(
        logger: logger, retry: StartupRetry(), sqliteCacheMiB: settings.sqliteCacheMiB
    ) { store in
        let graph = try await buildServices(plan, store: store, registry: registry, logger: logger, retry: StartupRetry())
        do {
            try await runUntilSignalled(graph.services, logger: logger)
        } catch {
            await graph.shutdown()
            throw error
        }
        await graph.shutdown()
    }
}

/// Connects to the broker. A long-running role passes `retry`, so it waits for a broker
/// that is not up yet; a one-shot command fails at once and says why.
public func connect(
    _ configuration: AMQPConfiguration, as name: String, logger: Logger, retry: StartupRetry? = nil
) async throws -> AMQPConnection {
    var configuration = configuration
    configuration.connectionName = "liveline-\(name)"
    guard let retry else { return try await AMQPConnection.connect(configuration, logger: logger) }
    return try await retry.run("broker (\(name))", logger: logger) {
        try await AMQPConnection.connect(configuration, logger: logger)
    }
}

/// Runs the services in one group that shuts down gracefully on SIGTERM or SIGINT.
public func runUntilSignalled(_ services: [any Service], logger: Logger) async throws {
    let group = ServiceGroup(configuration: .init(
        services: services.map(ServiceGroupConfiguration.ServiceConfiguration.init(named:)),
        gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
    try await group.run()
}

extension ServiceGroupConfiguration.ServiceConfiguration {
    /// A service named by its type, e.g. `TranslatorService`. Left unnamed, ServiceLifecycle
    /// names a service `"\(service)"`: a reflection of the whole value, the translator's
    /// configuration and all. That cost 100 million instructions at the translator's start,
    /// and was the `service` field of ServiceLifecycle's log lines and errors.
    public init(named service: any Service) {
        self.init(service: service, serviceName: String(describing: type(of: service)))
    }
}

/// What a role reads from its settings, all read and checked before anything is opened.
struct RoleSettings {
    let role: LivelineRole
    let common: LivelineSettings
    let workers: WorkerSettings
    /// The apps' APNs settings: the sender's, and the translator's when a domain broadcasts.
    let apns: APNsSettings?
    /// The api's configuration, with the key it checks callers with.
    let api: APIConfiguration?

    init(_ role: LivelineRole, config: ConfigReader) throws {
        self.role = role
        common = try LivelineSettings(config: config)
        workers = try WorkerSettings(config: config)
        switch role {
        case .translator:
            // A channel domain's channels are opened by the translator, before the first push.
            let channelDomains = workers.translator.domains.filter { $0.delivery == .channel }.map(\.name)
            apns = channelDomains.isEmpty ? nil : try Self.translatorAPNs(config, channelDomains: channelDomains)
            api = nil
        case .sender:
            apns = try APNsSettings(config: config)
            api = nil
        case .api:
            apns = nil
            guard let key = common.api.jwtKey else {
                throw SettingsError(
                    "set LIVELINE_API_JWT_HS256_SECRET(_FILE) or LIVELINE_API_JWT_ES256_PUBLIC_KEY_FILE: the api authenticates every app call")
            }
            let verification: AuthenticationConfiguration.VerificationKey =
                switch key {
                case .hs256(let secret): .hs256Secret(secret)
                case .es256(let pem): .es256PublicKey(pem: pem)
                }
            api = APIConfiguration(
                host: common.api.host, port: common.api.port,
                authentication: .init(key: verification, issuer: common.api.issuer, audience: common.api.audience),
                topicKinds: common.api.topicKinds,
                sharedDomains: Set(workers.translator.domains.filter(\.shared).map(\.name)))
        }
    }

    private static func translatorAPNs(_ config: ConfigReader, channelDomains: [String]) throws -> APNsSettings {
        do {
            return try APNsSettings(config: config)
        } catch {
            throw SettingsError(
                "the \(channelDomains.joined(separator: ", ")) domain(s) broadcast on APNs channels, which the translator "
                    + "opens before the first push: give it the apps' APNs settings, as the sender has them. \(error)")
        }
    }
}

// MARK: - The roles

private func buildTranslator(
    into graph: inout ServiceGraph, _ role: RoleSettings, store: any ActivityStore, registry: PrometheusCollectorRegistry,
    logger: Logger, retry: StartupRetry?
) async throws {
    let (settings, workers) = (role.common, role.workers)
    graph.apns = try role.apns?.clients(logger: logger)
    let consumer = try await graph.connect("translator-in", settings, logger: logger, retry: retry)
    let publisher = try await graph.connect("translator-out", settings, logger: logger, retry: retry)
    try await workers.topology.checkShardCounts(on: publisher)
    try await publisher.declare(workers.topology.amqp)
    let health = WorkLoopHealth(stallAfter: settings.ops.stallAfter)
    graph.services.append(
        TranslatorService(
            consumer: consumer, publisher: publisher, store: store,
            translator: Translator(configuration: workers.translator), topology: workers.topology,
            settings: workers.translatorSettings, logger: logger, health: health,
            channels: graph.apns.map { ChannelOpener(store: store, clients: $0, logger: logger) }))
    graph.services.append(TracePruner(store: store, retention: workers.traceRetention, logger: logger))
    let gauges = TransportGauges(registry: registry, health: health, brokers: graph.brokers)
    graph.services.append(
        OpsEndpoints(registry: registry, health: health, gauges: gauges) {
            [.broker("broker-consume", consumer), .broker("broker-publish", publisher), await .store(store)]
        }.application(host: settings.ops.host, port: settings.ops.port, logger: logger))
}

private func buildSender(
    into graph: inout ServiceGraph, _ role: RoleSettings, store: any ActivityStore, registry: PrometheusCollectorRegistry,
    logger: Logger, retry: StartupRetry?
) async throws {
    let (settings, workers) = (role.common, role.workers)
    let clients = try role.apns!.clients(logger: logger)
    graph.apns = clients
    let consuming = try await graph.connect("sender-in", settings, logger: logger, retry: retry)
    let publishing = try await graph.connect("sender-out", settings, logger: logger, retry: retry)
    try await workers.topology.checkShardCounts(on: publishing)
    try await publishing.declare(workers.topology.amqp)
    let health = WorkLoopHealth(stallAfter: settings.ops.stallAfter)
    graph.services.append(
        SenderService(
            consuming: consuming, publishing: publishing, clients: clients, store: store,
            settings: workers.senderSettings, logger: logger, health: health))
    graph.services.append(TracePruner(store: store, retention: workers.traceRetention, logger: logger))
    let channelBundles = Dictionary(
        workers.translator.domains.filter { $0.delivery == .channel }.map { ($0.name, $0.bundleId) }) { $1 }
    if !channelBundles.isEmpty {
        graph.services.append(ChannelSweeper(store: store, clients: clients, bundles: channelBundles, logger: logger))
    }
    // The keeper consumes on a connection of its own, beside the sender's.
    let keeping = workers.keeperEnabled ? try await graph.connect("dead-letter-keeper", settings, logger: logger, retry: retry) : nil
    if let keeping { graph.services.append(DeadLetterKeeper(connection: keeping, store: store, topology: workers.topology, logger: logger)) }
    let gauges = TransportGauges(
        registry: registry, health: health, brokers: graph.brokers,
        apns: clients.namedClients.map { (String($0.name.dropFirst("apns ".count)), $0.client) })
    graph.services.append(
        OpsEndpoints(registry: registry, health: health, gauges: gauges) {
            var checks: [ReadinessCheck] = [.broker("broker-consume", consuming), .broker("broker-publish", publishing)]
            if let keeping { checks.append(.broker("broker-keeper", keeping)) }
            checks += clients.namedClients.map { ReadinessCheck.apns($0.name, $0.client) }
            checks.append(await .store(store))
            return checks
        }.application(host: settings.ops.host, port: settings.ops.port, logger: logger))
}
