import ArgumentParser
import LivelineRuntime
import Metrics
import Prometheus

// Tests: Tests/LivelineRuntimeTests/LivelineExecutableTests.swift, scripts/faults, scripts/bench-smoke

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
        let registry = metricsRegistry
        try await runRole(.translator, config: try await LivelineSettings.reader(file: options.config), registry: registry, logger: logger)
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
        let registry = metricsRegistry
        try await runRole(.sender, config: try await LivelineSettings.reader(file: options.config), registry: registry, logger: logger)
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
