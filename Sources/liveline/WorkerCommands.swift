import ArgumentParser
import Foundation
import LivelineAMQP
import LivelineAPNs
import LivelineCore
import LivelineMessaging
import LivelineRuntime
import LivelineServices
import Logging
import Metrics
import Prometheus
import ServiceLifecycle

/// `liveline translator`: domain events in, push jobs out.
struct TranslatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "translator",
        abstract: "Consume liveline.translate and publish ActivityKit push jobs (scale out by running more)."
    )

    @OptionGroup var options: CommonOptions

    func run() async throws {
        let logger = options.logger("liveline.translator")
        // Before any service creates its counters, so they all report to /metrics.
        let metricsRegistry = metricsRegistry
        let config = try await LivelineSettings.reader(file: options.config)
        let settings = try LivelineSettings(config: config)
        let workers = try WorkerSettings(config: config)
        let topology = workers.topology
        // A channel domain's channels are opened by the translator, before the first push.
        let channelDomains = workers.translator.domains.filter { $0.delivery == .channel }.map(\.name)
        var clients: APNsClientDirectory?
        if !channelDomains.isEmpty {
            do {
                clients = try APNsSettings(config: config).clients(logger: logger)
            } catch {
                throw ValidationError(
                    "the \(channelDomains.joined(separator: ", ")) domain(s) broadcast on APNs channels, which the translator "
                        + "opens before the first push: give it the apps' APNs settings, as the sender has them. \(error)")
            }
        }
        try await settings.store.withStore(logger: logger, retry: StartupRetry(), sqliteCacheMiB: settings.sqliteCacheMiB ?? 32) { store in
            let consumer = try await connect(settings.amqp, as: "translator-in", logger: logger, retry: StartupRetry())
            let publisher = try await connect(settings.amqp, as: "translator-out", logger: logger, retry: StartupRetry())
            try await publisher.declare(topology.amqp)
            let health = WorkLoopHealth(stallAfter: settings.ops.stallAfter)
            let service = TranslatorService(
                consumer: consumer, publisher: publisher, store: store,
                translator: Translator(configuration: workers.translator), topology: topology,
                settings: TranslatorSettings(jobsPerMessage: workers.jobsPerMessage), logger: logger, health: health, channels: clients.map { ChannelOpener(store: store, clients: $0, logger: logger) })
            let pruner = TracePruner(store: store, retention: workers.traceRetention, logger: logger)
            let gauges = TransportGauges(
                registry: metricsRegistry, health: health, brokers: [("translator-in", consumer), ("translator-out", publisher)])
            let ops = OpsEndpoints(registry: metricsRegistry, health: health, gauges: gauges) {
                [.broker("broker-consume", consumer), .broker("broker-publish", publisher), await .store(store)]
            }.application(host: settings.ops.host, port: settings.ops.port, logger: logger)
            try await runUntilSignalled([service, pruner, ops], logger: logger)
            await consumer.close()
            await publisher.close()
        }
        await clients?.shutdown()
    }
}

/// `liveline sender`: push jobs in, APNs requests out.
struct SenderCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sender",
        abstract: "Consume liveline.send and push to APNs over HTTP/2 (scale out by running more)."
    )

    @OptionGroup var options: CommonOptions

    func run() async throws {
        let logger = options.logger("liveline.sender")
        // Before any service creates its counters, so they all report to /metrics.
        let metricsRegistry = metricsRegistry
        let config = try await LivelineSettings.reader(file: options.config)
        let settings = try LivelineSettings(config: config)
        let workers = try WorkerSettings(config: config)
        let clients = try APNsSettings(config: config).clients(logger: logger)
        try await settings.store.withStore(logger: logger, retry: StartupRetry(), sqliteCacheMiB: settings.sqliteCacheMiB ?? 2) { store in
            let consuming = try await connect(settings.amqp, as: "sender-in", logger: logger, retry: StartupRetry())
            let publishing = try await connect(settings.amqp, as: "sender-out", logger: logger, retry: StartupRetry())
            try await publishing.declare(workers.topology.amqp)
            let health = WorkLoopHealth(stallAfter: settings.ops.stallAfter)
            let service = SenderService(
                consuming: consuming, publishing: publishing, clients: clients, store: store,
                settings: SenderSettings(topology: workers.topology), logger: logger, health: health)
            var services: [any Service] = [service, TracePruner(store: store, retention: workers.traceRetention, logger: logger)]
            let channelBundles = Dictionary(
                workers.translator.domains.filter { $0.delivery == .channel }.map { ($0.name, $0.bundleId) }) { $1 }
            if !channelBundles.isEmpty {
                services.append(ChannelSweeper(store: store, clients: clients, bundles: channelBundles, logger: logger))
            }
            // The keeper consumes on a connection of its own, beside the sender's.
            let keeping = workers.keeperEnabled ? try await connect(settings.amqp, as: "dead-letter-keeper", logger: logger, retry: StartupRetry()) : nil
            if let keeping { services.append(DeadLetterKeeper(connection: keeping, store: store, logger: logger)) }
            var brokers = [(name: "sender-in", connection: consuming), (name: "sender-out", connection: publishing)]
            if let keeping { brokers.append(("dead-letter-keeper", keeping)) }
            let gauges = TransportGauges(
                registry: metricsRegistry, health: health, brokers: brokers,
                apns: clients.namedClients.map { (String($0.name.dropFirst("apns ".count)), $0.client) })
            services.append(OpsEndpoints(registry: metricsRegistry, health: health, gauges: gauges) {
                var checks: [ReadinessCheck] = [.broker("broker-consume", consuming), .broker("broker-publish", publishing)]
                if let keeping { checks.append(.broker("broker-keeper", keeping)) }
                checks += clients.namedClients.map { ReadinessCheck.apns($0.name, $0.client) }
                checks.append(await .store(store))
                return checks
            }.application(host: settings.ops.host, port: settings.ops.port, logger: logger))
            try await runUntilSignalled(services, logger: logger)
            await consuming.close()
            await publishing.close()
            await keeping?.close()
        }
        await clients.shutdown()
    }
}

/// `liveline run`: the whole pipeline on this machine with demo producers and the simulator.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run Liveline end to end on this machine: demo events → translator → sender → APNs simulator.",
        discussion: "Needs a RabbitMQ (LIVELINE_AMQP_URL, default the local one scripts/run starts). Stores state in SQLite."
    )

    @OptionGroup var options: CommonOptions
    @Option(help: "SQLite file for this run (recreated).") var store = ".liveline/quickstart.sqlite"
    @Option(help: "Seconds to wait for every push.") var timeout = 60

    func run() async throws {
        var logger = options.logger("liveline.run")
        logger.logLevel = max(logger.logLevel, .notice)
        let settings = try await LivelineSettings.load(file: options.config)
        print("Liveline quickstart: broker \(settings.amqp), store sqlite:\(store), APNs simulator on loopback (HTTP/2 + TLS)")
        let report = try await Quickstart(amqp: settings.amqp, storePath: store, timeout: .seconds(timeout))
            .run(logger: logger)
        print(report)
        if !report.succeeded { throw ExitCode.failure }
    }
}

/// The process's Prometheus registry, which swift-metrics reports into: every counter the
/// translator, sender and api record is served on `/metrics`. Bootstrapped once, on first use.
let metricsRegistry: PrometheusCollectorRegistry = {
    let registry = PrometheusCollectorRegistry()
    MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
    return registry
}()

/// Connects to the broker. A long-running role passes `retry`, so it waits for a broker
/// that is not up yet; a one-shot command fails at once and says why.
func connect(
    _ configuration: AMQPConfiguration, as name: String, logger: Logger, retry: StartupRetry? = nil
) async throws -> AMQPConnection {
    var configuration = configuration
    configuration.connectionName = "liveline-\(name)"
    guard let retry else { return try await AMQPConnection.connect(configuration, logger: logger) }
    return try await retry.run("broker (\(name))", logger: logger) {
        try await AMQPConnection.connect(configuration, logger: logger)
    }
}

func runUntilSignalled(_ services: [any Service], logger: Logger) async throws {
    let group = ServiceGroup(
        configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
    try await group.run()
}
