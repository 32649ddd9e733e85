import ArgumentParser
import Foundation

@main
struct LivelineBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "liveline-bench",
        abstract: "Throughput benchmarks that print figures (run with -c release).",
        subcommands: [AMQPBenchmark.self, ScaleBenchmark.self]
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
