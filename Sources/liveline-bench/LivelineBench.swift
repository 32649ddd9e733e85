import ArgumentParser
import Foundation

@main
struct LivelineBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "liveline-bench",
        abstract: "Throughput benchmarks that print figures (run with -c release).",
        subcommands: [AMQPBenchmark.self]
    )
}

/// Peak resident set size of this process, from the kernel's high-water mark.
func peakRSSMegabytes() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
        let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
    else { return 0 }
    return kilobytes / 1024
}

func rate(_ count: Int, _ elapsed: Duration) -> String {
    String(format: "%.0f/s", Double(count) / elapsed.seconds)
}

extension Duration {
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
