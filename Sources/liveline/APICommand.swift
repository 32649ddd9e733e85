import ArgumentParser
import Hummingbird
import LivelineAPI
import LivelineLogging
import LivelineRuntime
import Logging
import ServiceLifecycle

/// `liveline api`: the HTTP api apps register their push tokens with.
struct APICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "api",
        abstract: "Serve the token-registration api (/v1, /healthz, /metrics)."
    )

    @OptionGroup var options: CommonOptions

    func run() async throws {
        let logger = options.logger("liveline.api")
        let metricsRegistry = metricsRegistry
        let config = try await LivelineSettings.reader(file: options.config)
        let settings = try LivelineSettings(config: config)
        guard let key = settings.api.jwtKey else {
            throw ValidationError(
                "set LIVELINE_API_JWT_HS256_SECRET(_FILE) or LIVELINE_API_JWT_ES256_PUBLIC_KEY_FILE: the api authenticates every app call"
            )
        }
        let verification: AuthenticationConfiguration.VerificationKey =
            switch key {
            case .hs256(let secret): .hs256Secret(secret)
            case .es256(let pem): .es256PublicKey(pem: pem)
            }
        let configuration = APIConfiguration(
            host: settings.api.host, port: settings.api.port,
            authentication: .init(key: verification, issuer: settings.api.issuer, audience: settings.api.audience),
            topicKinds: settings.api.topicKinds,
            sharedDomains: Set(try WorkerSettings(config: config).translator.domains.filter(\.shared).map(\.name)))
        logger.info("starting api", metadata: RuntimeLogKey.metadata([.store: "\(settings.store)", .port: "\(settings.api.port)"]))
        try await settings.store.withStore(logger: logger, retry: StartupRetry(), sqliteCacheMiB: settings.sqliteCacheMiB ?? 2) { store in
            let app = try await buildApplication(
                configuration: configuration, store: store, registry: metricsRegistry, logger: logger)
            let group = ServiceGroup(
                configuration: .init(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
            try await group.run()
        }
    }
}
