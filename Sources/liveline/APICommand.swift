import ArgumentParser
import LivelineRuntime

// Tests: scripts/check-docs, scripts/bench

/// `liveline api`: the HTTP api apps register their push tokens with.
struct APICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "api",
        abstract: "Serve the token-registration api (/v1, /healthz, /metrics)."
    )

    @OptionGroup var options: CommonOptions

    func run() async throws {
        let logger = options.logger("liveline.api")
        let registry = metricsRegistry
        try await runRole(.api, config: try await LivelineSettings.reader(file: options.config), registry: registry, logger: logger)
    }
}
