import ArgumentParser
import Foundation

@main
struct Liveline: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "liveline",
        abstract: "Keeps iOS Live Activities in step with your backend.",
        discussion: """
            Settings come from LIVELINE_* environment variables and an optional JSON file \
            (--config); see the README's configuration reference.
            """,
        subcommands: [
            RunCommand.self, TranslatorCommand.self, SenderCommand.self, APICommand.self, APNsSimulatorCommand.self,
            TopologyCommand.self, DLQCommand.self, TraceCommand.self, PublishCommand.self, DemoCommand.self,
        ]
    )
}

/// Options every long-running subcommand takes.
struct CommonOptions: ParsableArguments {
    @Option(name: .long, help: "A JSON configuration file; LIVELINE_* environment variables override it.")
    var config: String?

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"
}
