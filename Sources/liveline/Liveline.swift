import ArgumentParser
import Foundation
import LivelineRuntime
import Logging

// Tests: Tests/LivelineRuntimeTests/LivelineExecutableTests.swift, scripts/check-docs

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
            TopologyCommand.self, ReshardCommand.self, DLQCommand.self, TraceCommand.self, PublishCommand.self, DemoCommand.self,
            UserCommand.self, AuditCommand.self, RegistrationsCommand.self, PushCommand.self, ProducerKeyCommand.self, SettingsCommand.self,
        ]
    )
}

/// Options every long-running subcommand takes.
struct CommonOptions: ParsableArguments {
    @Option(name: .long, help: "A JSON configuration file; LIVELINE_* environment variables override it.")
    var config: String?

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    @Option(name: .long, help: "Log format: text, or json (one object per line) for log pipelines. Default: LIVELINE_LOG_FORMAT, else text.")
    var logFormat: String = ProcessInfo.processInfo.environment["LIVELINE_LOG_FORMAT"] ?? "text"

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical, not \(logLevel)")
        }
        guard LogFormat(rawValue: logFormat) != nil else {
            throw ValidationError("--log-format (or LIVELINE_LOG_FORMAT) must be text or json, not \(logFormat)")
        }
    }

    /// A logger at the chosen level, after the chosen format is set for the whole process.
    func logger(_ label: String) -> Logger {
        (LogFormat(rawValue: logFormat) ?? .text).bootstrap()
        var logger = Logger(label: label)
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        return logger
    }
}
