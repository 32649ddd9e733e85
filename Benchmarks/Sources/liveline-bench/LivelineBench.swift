import ArgumentParser
import Foundation

// Tests: scripts/bench-smoke, scripts/faults

@main
struct LivelineBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "liveline-bench",
        abstract: "Throughput benchmarks that print figures (run with -c release).",
        subcommands: [
            AMQPBenchmark.self, ScaleBenchmark.self, E2EBenchmark.self, SenderDrainBenchmark.self, TranslatorDrainBenchmark.self,
            GameBenchmark.self, TrickleFloorBenchmark.self, IntakeBenchmark.self,
            FaultSuite.self,
        ]
    )
}

func rate(_ count: Int, _ elapsed: Duration) -> String {
    String(format: "%.0f/s", Double(count) / elapsed.seconds)
}

extension Duration {
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

/// The workers the end-to-end commands start, and their broker.
struct WorkerOptions: ParsableArguments {
    @Option(help: "The liveline executable the workers run (default: beside this one).") var liveline: String?
    @Option(help: "Broker URL.") var amqpURL = "amqp://guest:guest@127.0.0.1:5672/%2f"
}

/// Prints a summary for tools to read.
func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}
