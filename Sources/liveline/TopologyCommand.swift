import ArgumentParser
import Foundation
import LivelineAMQP
import LivelineMessaging

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

    func run() async throws {
        let topology = LivelineTopology().amqp
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
