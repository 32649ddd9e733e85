import ArgumentParser
import Foundation
import LivelineMessaging
import LivelineRuntime

// Tests: scripts/faults, scripts/check-docs

/// `liveline reshard`: changes one stage's shard count on the running broker, with nothing
/// lost and each activity kept in order (``Resharding``).
struct ReshardCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reshard",
        abstract: "Change a stage's shard count on the running broker, losing nothing and keeping each activity in order.",
        discussion: """
            Declares the new shards beside the old ones (for translate, new events go to them at once), waits \
            until the old shards have stayed empty for --quiet-seconds while the workers of the old count drain \
            them, then deletes them. Meanwhile roll the workers to the new count (liveline.<stage>.shards): they \
            wait until the old shards are gone. For send, roll the translators first, then the senders. \
            docs/SCALING.md has the whole procedure.
            """)

    @OptionGroup var options: CommonOptions
    @Argument(help: "The stage: translate or send.") var stage: String
    @Option(help: "The new shard count (1 to \(LivelineTopology.maximumShards)).") var to: Int
    @Option(help: "How long the old shards must stay empty before they are deleted.") var quietSeconds = 5
    @Flag(help: "Print the summary as JSON.") var json = false

    func validate() throws {
        guard Resharding.StageKind(rawValue: stage) != nil else {
            throw ValidationError("the stage must be translate or send, not \(stage)")
        }
        guard (1...LivelineTopology.maximumShards).contains(to) else {
            throw ValidationError("--to must be 1 to \(LivelineTopology.maximumShards), not \(to)")
        }
        guard quietSeconds >= 1 else { throw ValidationError("--quiet-seconds must be at least 1") }
    }

    func run() async throws {
        let logger = onCallLogger(options)
        let config = try await LivelineSettings.reader(file: options.config)
        let settings = try LivelineSettings(config: config)
        let topology = try WorkerSettings(config: config).topology
        var resharding = Resharding(topology: topology, stage: Resharding.StageKind(rawValue: stage)!, to: to)
        resharding.quiet = .seconds(quietSeconds)
        let connection = try await connect(settings.amqp, as: "reshard", logger: logger)
        let summary: Resharding.Summary
        do {
            let interactive = Terminal.isInteractive && !json
            summary = try await resharding.run(on: connection) { progress in
                let line = progress.leasesHeld > 0
                    ? "reshard: old shards deleted; \(progress.leasesHeld) of their workers finishing what they received"
                    : "reshard: \(progress.waiting) message(s) left in the old shards; empty for "
                        + "\(progress.emptyFor.components.seconds) of \(quietSeconds) s"
                if interactive { FileHandle.standardError.write(Data(("\r" + line).utf8)) }
            }
            if interactive { FileHandle.standardError.write(Data("\n".utf8)) }
        } catch {
            await connection.close()
            throw error
        }
        await connection.close()
        if json {
            print(String(decoding: try JSONEncoder.sorted.encode(summary), as: UTF8.self))
        } else if summary.deleted.isEmpty {
            print("\(summary.stage) already has \(summary.to) shard(s); nothing to do")
        } else {
            print("\(summary.stage): \(summary.from) -> \(summary.to) shards; deleted \(summary.deleted.count) old shard queue(s)")
            print("every worker must now run with \(stage == "translate" ? LivelineTopology.shardSettings.translate : LivelineTopology.shardSettings.send)=\(summary.to)")
        }
    }
}
