import ArgumentParser
import LivelineCore

// Tests: Tests/LivelineRuntimeTests/LivelineExecutableTests.swift

/// `--app`: the app whose activity, user and topic ids an on-call command is given. Two apps'
/// `r-1` are two activities (``AppKeys``).
struct AppOption: ParsableArguments {
    @Option(help: "The app (bundle id) the ids are of; default: the deployment's default app.") var app: String?

    /// The app asked for, or the default; one the deployment does not serve is an error naming those it does.
    func resolve(_ domains: TranslatorConfiguration) throws -> String { try Self.resolve(app, domains) }

    static func resolve(_ app: String?, _ domains: TranslatorConfiguration) throws -> String {
        let app = app ?? domains.defaultApp
        guard domains.apps.contains(app) else {
            throw ValidationError("--app \(app): this deployment serves \(domains.apps.joined(separator: ", "))")
        }
        return app
    }
}
