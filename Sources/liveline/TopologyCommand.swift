import ArgumentParser
import Foundation
import LivelineAMQP
import LivelineMessaging

// Tests: scripts/check-docs

/// `liveline topology`: prints the broker topology as RabbitMQ definitions, or declares it.
struct TopologyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "topology",
        abstract: "Print the broker topology as RabbitMQ definitions JSON, or declare it on a broker."
    )

    @Option(help: "Declare the topology on this broker (amqp:// or amqps:// URL) instead of printing it.")
    var declare: String?

    @Option(help: "Virtual host written into the definitions.")
    var vhost = "/"

    @Option(help: "The translate stage's shards (liveline.translate.shards).")
    var translateShards = 1

    @Option(help: "The send stage's shards (liveline.send.shards).")
    var sendShards = 1

    func validate() throws {
        for (name, value) in [("--translate-shards", translateShards), ("--send-shards", sendShards)]
        where !(1...LivelineTopology.maximumShards).contains(value) {
            throw ValidationError("\(name) must be 1 to \(LivelineTopology.maximumShards), not \(value)")
        }
    }

    func run() async throws {
        let topology = LivelineTopology(translateShards: translateShards, sendShards: sendShards).amqp
        guard let url = declare else {
            FileHandle.standardOutput.write(topology.definitionsJSON(virtualHost: vhost))
            print()
            return
        }
        let connection = try await AMQPConnection.connect(try AMQPConfiguration(url: url))
        try await connection.declare(topology)
        await connection.close()
        print(
            "declared \(topology.exchanges.count) exchanges, \(topology.queues.count) queues, \(topology.bindings.count) bindings"
        )
    }
}
