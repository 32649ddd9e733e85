import ArgumentParser
import Foundation
import LivelineCore
import LivelineRuntime
import LivelineServices
import LivelineStore

// Tests: scripts/check-docs

/// `liveline user`: support's commands for one user.
struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user", abstract: "Support's commands for one user.", subcommands: [Forget.self])

    struct Forget: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Erase a user: end their live activities on their devices, then remove everything that names them.",
            discussion: """
                Removes the user's tokens of every kind, follows, preferences, late starts, personal activities with \
                their trace, and the dead letters of those activities or that name the user or their tokens (deleted, \
                not redacted: a letter is kept to be replayed, and a redacted one could not be). A shared activity \
                such as a game stays, without them. A live personal activity is ended at once on the user's devices \
                first. Running it again removes nothing more.
                """)
        @OptionGroup var options: CommonOptions
        @Argument(help: "The user id, as the app's JWT names it (sub).") var userID: String
        @OptionGroup var app: AppOption
        @Flag(help: "Do not ask for confirmation on a terminal.") var yes = false
        @Flag(help: "JSON for tools: what was ended and removed.") var json = false
        @OptionGroup var audit: AuditOptions

        func run() async throws {
            let logger = onCallLogger(options)
            let config = try await LivelineSettings.reader(file: options.config)
            let settings = try LivelineSettings(config: config)
            let workers = try WorkerSettings(config: config, domains: settings.domains)
            let userApp = try app.resolve(workers.translator)
            let user = workers.translator.keys.key(app: userApp, id: userID)
            try await settings.store.withStore(logger: logger, apps: settings.apps) { store in
                if !yes {
                    guard Terminal.isInteractive else { throw OnCallError("forgetting user \(userID) needs --yes when not on a terminal") }
                    guard Terminal.confirm("forget user \(userID) and everything that names them?") else {
                        throw OnCallError("not confirmed; nothing removed")
                    }
                }
                let topology = workers.topology
                let summary = try await withPublisher(settings.amqp, topology: topology, as: "user-forget", logger: logger) {
                    try await UserEraser(
                        store: store, translator: Translator(configuration: workers.translator), publisher: $0, topology: topology
                    ).forget(user)
                }
                try await audit.record(
                    "user forget", parameters: ["user": AuditEntry.erasedUser(userID), "app": userApp],
                    outcome: "ended \(summary.ended) live activities (\(summary.endPushes) push(es)); removed \(summary.erased.total) row(s)",
                    in: store)
                print(json ? String(decoding: try JSONEncoder.sorted.encode(summary), as: UTF8.self) : Self.text(summary, userID))
            }
        }

        static func text(_ summary: UserEraser.Summary, _ userID: String) -> String {
            guard !summary.isEmpty else { return "nothing stored for user \(userID); nothing to remove" }
            let erased = summary.erased
            return """
                forgot user \(userID): ended \(summary.ended) live activit\(summary.ended == 1 ? "y" : "ies") on their devices \
                (\(summary.endPushes) push(es)); removed \(erased.activities) activities, \(erased.updateTokens) update token(s), \
                \(erased.pushToStartTokens) push-to-start token(s), \(erased.follows) follow(s), \(erased.preferences) preference row(s), \
                \(erased.traceLines) trace line(s), \(erased.deadLetters) dead letter(s)
                """
        }
    }
}

extension JSONEncoder {
    /// Keys sorted, so tools and tests read the same bytes each time.
    static var sorted: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }
}
