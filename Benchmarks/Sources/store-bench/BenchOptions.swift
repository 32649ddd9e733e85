import Foundation

// Tests: scripts/bench-smoke

/// Command-line settings of the benchmark, with defaults sized for a 2-core machine.
struct BenchOptions: Sendable {
    var batches = 20
    var batchSize = 500
    var activities = 10_000
    var requests = 5_000
    var concurrency = 32

    init(arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let flag = iterator.next() {
            let value = iterator.next().flatMap(Int.init)
            switch (flag, value) {
            case ("--batches", let value?): batches = value
            case ("--batch-size", let value?): batchSize = value
            case ("--activities", let value?): activities = value
            case ("--requests", let value?): requests = value
            case ("--concurrency", let value?): concurrency = value
            default:
                let usage = "usage: store-bench [--batches N] [--batch-size N] [--activities N] [--requests N] [--concurrency N]"
                if flag == "-h" || flag == "--help" {
                    print(usage)
                    exit(0)
                }
                // A benchmark that ran on with a setting it did not take would print figures for another run.
                FileHandle.standardError.write(Data("store-bench: \(flag) is not an option, or wants a whole number\n\(usage)\n".utf8))
                exit(2)
            }
        }
    }
}
