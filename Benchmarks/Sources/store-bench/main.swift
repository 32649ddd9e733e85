import Foundation

// Tests: scripts/bench-smoke

/// Prints store and api throughput figures. Not a test: nothing here asserts a time.
///
///   swift run -c release store-bench [--batches N] [--requests N] [--concurrency N]
///
/// PostgreSQL is measured when LIVELINE_TEST_POSTGRES_URL is set (scripts/with-postgres does that).
let options = BenchOptions(arguments: CommandLine.arguments)
print("store-bench: \(options.batches) batches of \(options.batchSize) events; \(options.requests) api requests at concurrency \(options.concurrency)")
try await StoreBenchmark.runSQLite(options)
if let url = ProcessInfo.processInfo.environment["LIVELINE_TEST_POSTGRES_URL"], !url.isEmpty {
    try await StoreBenchmark.runPostgres(options, url: url)
} else {
    print("postgres: skipped (set LIVELINE_TEST_POSTGRES_URL, e.g. scripts/with-postgres swift run -c release store-bench)")
}
try await APIBenchmark.run(options)
