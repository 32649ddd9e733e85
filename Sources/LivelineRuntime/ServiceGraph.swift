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
import UnixSignals

/// The long-running roles one `liveline` image plays; each scales on its own.
public enum LivelineRole: String, Sendable, CaseIterable {
    /// Domain events in, push jobs out.
    case translator
    /// Push jobs in, APNs requests out; keeps the dead letters too, unless told not to.
    case sender
    /// The HTTP api apps register their tokens with.
    case api

    /// The port a worker serves `/metrics`, `/healthz` and `/readyz` on when
    /// `liveline.ops.port` is not set: each role its own, so that a translator and a sender
    /// started on one host with default settings both run. The api serves them on its own
    /// port (`liveline.api.port`, 8080), so it has none.
    public var defaultOpsPort: Int? {
        switch self {
        case .translator: 9090
        case .sender: 9091
        case .api: nil
        }
    }
}

/// A role's services, wired and ready to run in one group, in an order that is also their
/// shutdown order, reversed: the broker connections and the APNs clients come before the
/// services that use them, so they close only after those have drained.
public struct ServiceGraph: Sendable {
    /// Run these in one `ServiceGroup`.
    public var services: [any Service]
    /// The broker connections the services use, by name, as `/readyz` and the gauges know them.
    public var brokers: [(name: String, connection: AMQPConnection)]
    /// The APNs clients the services send through, if the role sends.
    public var apns: APNsClientDirectory?
    /// The api's publisher of events taken over HTTPS, if the role is the api.
    var eventSink: BrokerEventSink?

    /// A broker connection for the graph's services: made here, opened and closed by a
    /// service of its own, listed now, before the services that will use it. With `retry`,
    /// its first connection waits for a broker that is not up yet, for as long.
    mutating func connect(
        _ name: String, _ settings: LivelineSettings, maximumHeldBytes: Int? = nil, retry: StartupRetry?, logger: Logger
    ) throws -> AMQPConnection {
        var amqp = settings.amqp
        amqp.maximumHeldBytes = maximumHeldBytes
        amqp.connectionName = "liveline-\(name)"
        amqp.firstConnectionPatience = retry?.limit ?? .zero
        let connection = try AMQPConnection(amqp, logger: logger)
        brokers.append((name, connection))
        services.append(BrokerConnectionService(connection: connection))
        return connection
    }

    /// The APNs clients the services send through, closed by a service listed now, before them.
    mutating func add(apns clients: APNsClientDirectory) {
        apns = clients
        services.append(ClosingService { await clients.shutdown() })
    }

    /// Closes what a graph opened when its services never ran: building failed part way, or
    /// a test looked at the graph. A graph that ran closed everything as its group stopped.
    public func shutdown() async {
        for broker in brokers { await broker.connection.close() }
        await eventSink?.close()
        await apns?.shutdown()
    }
}

/// Closes something its role's services use once they have stopped: listed before them in
/// the group, it is stopped after them.
struct ClosingService: Service {
    let close: @Sendable () async -> Void

    func run() async throws {
        try? await gracefulShutdown()
        await close()
    }
}

/// The composition root: every role's services, built from settings alone.
///
/// The executable only parses arguments and runs what this returns, so a test can build any
/// role's whole graph in memory, from an in-memory `ConfigReader` and a store of its own, and
/// look at what would run, with no broker: nothing here touches the network. The broker
/// connections open when the graph's group runs (with `retry`, waiting for a broker that is
/// not up yet).
public func buildServices(
    role: LivelineRole, config: ConfigReader, store: any ActivityStore, registry: PrometheusCollectorRegistry,
    logger: Logger, retry: StartupRetry? = StartupRetry()
) async throws -> ServiceGraph {
    try await buildServices(RoleSettings(role, config: config), store: store, registry: registry, logger: logger, retry: retry)
}

func buildServices(
    _ role: RoleSettings, store: any ActivityStore, registry: PrometheusCollectorRegistry, logger: Logger, retry: StartupRetry?
) async throws -> ServiceGraph {
    var graph = ServiceGraph(services: [], brokers: [], apns: nil, eventSink: nil)
    do {
        switch role.role {
        case .translator: try buildTranslator(into: &graph, role, store: store, registry: registry, logger: logger, retry: retry)
        case .sender: try buildSender(into: &graph, role, store: store, registry: registry, logger: logger, retry: retry)
        case .api:
            let sink = BrokerEventSink(
                amqp: role.common.amqp, topology: role.workers.topology, timeout: role.common.api.publishTimeout, logger: logger)
            graph.eventSink = sink
            graph.services.append(ClosingService { await sink.close() })
            var configuration = role.api!
            configuration.events = EventIntakeConfiguration(
                translator: Translator(configuration: role.workers.translator), producers: role.common.api.producers, sink: sink,
                maximumBatchEvents: role.common.api.maximumBatchEvents, maximumBodyBytes: role.common.api.maximumEventBodyBytes,
                retryAfterSeconds: max(1, Int(role.common.api.publishTimeout.components.seconds)))
            graph.services.append(ListeningService(
                server: try await buildApplication(
                    configuration: configuration, store: store, registry: registry, logger: logger,
                    forgetUser: userEraser(role, store: store, logger: logger)),
                port: role.listeningPort))
            // Outcomes for GET /v1/events/{id} and the webhooks, when any domain reports them.
            if !role.workers.outcomes.isEmpty {
                let api = role.common.api
                let webhooks = api.webhooks.isEmpty ? nil : WebhookDispatcher(webhooks: api.webhooks, giveUpAfter: api.webhookGiveUp, logger: logger)
                if let webhooks { graph.services.append(webhooks) }
                graph.services.append(OutcomeRelay(
                    amqp: role.common.amqp, topology: role.workers.topology, store: store, webhooks: webhooks, logger: logger))
            }
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
    // A port another process holds fails the role now, naming its setting, rather than after
    // the broker and the store were waited for and the work had begun.
    try await plan.listeningPort.checkFree()
    try await settings.store.withStore(
        logger: logger, retry: StartupRetry(), sqliteCacheMiB: settings.sqliteCacheMiB, apps: settings.apps
    ) { store in
        let graph = try await buildServices(plan, store: store, registry: registry, logger: logger, retry: StartupRetry())
        try await runUntilSignalled(graph.services, drainTimeout: settings.ops.drainTimeout, logger: logger)
    }
}

/// `liveline dlq keep`: the dead-letter keeper alone, its connection a service beside it,
/// until SIGTERM or SIGINT.
public func runDeadLetterKeeper(_ settings: LivelineSettings, store: any ActivityStore, logger: Logger) async throws {
    var graph = ServiceGraph(services: [], brokers: [], apns: nil, eventSink: nil)
    let connection = try graph.connect("dead-letter-keeper", settings, retry: StartupRetry(), logger: logger)
    graph.services.append(DeadLetterKeeper(connection: connection, store: store, logger: logger))
    try await runUntilSignalled(graph.services, logger: logger)
}

/// `DELETE /v1/me`'s erasure. It connects to the broker for each erasure, to publish the
/// ends of the user's live activities: erasures are rare, and the api serves the rest of its
/// routes whether the broker is up or not.
private func userEraser(_ role: RoleSettings, store: any ActivityStore, logger: Logger) -> ForgetUser {
    let (amqp, workers) = (role.common.amqp, role.workers)
    return { userID in
        let summary = try await withPublisher(amqp, topology: workers.topology, as: "user-forget", logger: logger) { connection in
            try await UserEraser(
                store: store, translator: Translator(configuration: workers.translator), publisher: connection,
                topology: workers.topology
            ).forget(userID)
        }
        return (summary.ended, summary.erased)
    }
}

/// Runs the services in one group that shuts down gracefully on SIGTERM or SIGINT.
///
/// With a `drainTimeout`, a drain still running that long after the signal ends the process
/// with an error line: whatever it had not acked the broker requeues when its connections
/// close, so nothing is lost, and an operator reads why it stopped rather than finding it
/// killed at the end of its grace.
public func runUntilSignalled(_ services: [any Service], drainTimeout: Duration? = nil, logger: Logger) async throws {
    let group = ServiceGroup(configuration: .init(
        services: services.map(ServiceGroupConfiguration.ServiceConfiguration.init(named:)),
        gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
    let watchdog = drainTimeout.map { timeout in
        Task {
            for await _ in await UnixSignalsSequence(trapping: .sigterm, .sigint) {
                try? await Task.sleep(for: timeout)
                guard !Task.isCancelled else { return }
                logger.error(
                    "drain did not finish in time; exiting, and the broker requeues what was not acked",
                    metadata: RuntimeLogKey.metadata([.drainTimeout: "\(timeout.components.seconds) s"]))
                exit(EXIT_FAILURE)
            }
        }
    }
    defer { watchdog?.cancel() }
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

    /// Where the role listens: the api on `liveline.api.port`, a worker on its ops port.
    var listeningPort: ListeningPort {
        switch role {
        case .api: ListeningPort(host: common.api.host, port: common.api.port, key: "liveline.api.port")
        case .translator, .sender:
            ListeningPort(host: common.ops.host, port: common.ops.port ?? role.defaultOpsPort ?? 0, key: "liveline.ops.port")
        }
    }

    init(_ role: LivelineRole, config: ConfigReader) throws {
        self.role = role
        common = try LivelineSettings(config: config)
        workers = try WorkerSettings(config: config, domains: common.domains)
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
            try ProducerSettings.check(common.api.producers, domains: Set(workers.translator.domains.map(\.name)))
            api = APIConfiguration(
                host: common.api.host, port: common.api.port,
                authentication: .init(
                    key: verification, issuer: common.api.issuer, audience: common.api.audience, apps: workers.translator.apiApps),
                topicKinds: common.api.topicKinds,
                sharedDomains: Set(workers.translator.domains.filter(\.shared).map(\.name)),
                tokenEnvironments: common.api.tokenEnvironments, limits: common.api.limits)
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
) throws {
    let (settings, workers) = (role.common, role.workers)
    if let clients = try role.apns?.clients(logger: logger) { graph.add(apns: clients) }
    let consumer = try graph.connect("translator-in", settings, retry: retry, logger: logger)
    let publisher = try graph.connect("translator-out", settings, retry: retry, logger: logger)
    let balance = try graph.connect("translator-balance", settings, retry: retry, logger: logger)
    let health = WorkLoopHealth(stallAfter: settings.ops.stallAfter)
    graph.services.append(
        TranslatorService(
            consumer: consumer, publisher: publisher, balance: balance, store: store,
            translator: Translator(configuration: workers.translator), topology: workers.topology,
            settings: workers.translatorSettings, logger: logger, health: health,
            channels: graph.apns.map { ChannelOpener(store: store, clients: $0, keys: workers.translator.keys, logger: logger) },
            outcomes: workers.outcomes))
    graph.services.append(RetentionPruner(store: store, settings: workers.retention, logger: logger))
    let gauges = TransportGauges(registry: registry, health: health, brokers: graph.brokers)
    let ops = role.listeningPort
    graph.services.append(ListeningService(
        server: OpsEndpoints(registry: registry, health: health, gauges: gauges) {
            [
                .broker("broker-consume", consumer), .broker("broker-publish", publisher), .broker("broker-balance", balance),
                await .store(store),
            ]
        }.application(host: ops.host, port: ops.port, logger: logger),
        port: ops))
}

private func buildSender(
    into graph: inout ServiceGraph, _ role: RoleSettings, store: any ActivityStore, registry: PrometheusCollectorRegistry,
    logger: Logger, retry: StartupRetry?
) throws {
    let (settings, workers) = (role.common, role.workers)
    let clients = try role.apns!.clients(logger: logger)
    graph.add(apns: clients)
    let consuming = try graph.connect("sender-in", settings, maximumHeldBytes: workers.senderPrefetchMiB << 20, retry: retry, logger: logger)
    let publishing = try graph.connect("sender-out", settings, retry: retry, logger: logger)
    let balance = try graph.connect("sender-balance", settings, retry: retry, logger: logger)
    // The keeper consumes on a connection of its own, beside the sender's.
    let keeping = workers.keeperEnabled ? try graph.connect("dead-letter-keeper", settings, retry: retry, logger: logger) : nil
    let health = WorkLoopHealth(stallAfter: settings.ops.stallAfter)
    graph.services.append(
        SenderService(
            consuming: consuming, publishing: publishing, balance: balance, clients: clients, store: store,
            settings: workers.senderSettings, logger: logger, health: health))
    graph.services.append(RetentionPruner(store: store, settings: workers.retention, logger: logger))
    let channelDomains = workers.translator.domains.filter { $0.delivery == .channel }
    if !channelDomains.isEmpty {
        graph.services.append(ChannelSweeper(
            store: store, clients: clients, apps: channelDomains.flatMap(\.apps), keys: workers.translator.keys,
            settings: ChannelSweeper.Settings(sweepsOrphans: workers.sweepsOrphanChannels), logger: logger))
    }
    if let keeping { graph.services.append(DeadLetterKeeper(connection: keeping, store: store, topology: workers.topology, logger: logger)) }
    let gauges = TransportGauges(
        registry: registry, health: health, brokers: graph.brokers,
        apns: clients.namedClients.map { (String($0.name.dropFirst("apns ".count)), $0.client) })
    let ops = role.listeningPort
    graph.services.append(ListeningService(
        server: OpsEndpoints(registry: registry, health: health, gauges: gauges) {
            var checks: [ReadinessCheck] = [
                .broker("broker-consume", consuming), .broker("broker-publish", publishing), .broker("broker-balance", balance),
            ]
            if let keeping { checks.append(.broker("broker-keeper", keeping)) }
            checks += clients.namedClients.map { ReadinessCheck.apns($0.name, $0.client) }
            checks.append(await .store(store))
            return checks
        }.application(host: ops.host, port: ops.port, logger: logger),
        port: ops))
}

extension TranslatorConfiguration {
    /// The apps the api serves, by domain and attributes type.
    var apiApps: APIApps {
        APIApps(
            defaultApp: defaultApp,
            appsOfDomain: Dictionary(domains.map { ($0.name, Set($0.apps)) }) { $0.union($1) },
            appsOfAttributesType: Dictionary(domains.map { ($0.attributesType, Set($0.apps)) }) { $0.union($1) })
    }
}
