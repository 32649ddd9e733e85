// Tests: none yet

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
            default: print("ignoring argument \(flag)")
            }
        }
    }
}
