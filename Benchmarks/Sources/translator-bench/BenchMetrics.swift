import CoreMetrics
import Synchronization

// Tests: scripts/bench-smoke

/// Sums what the translator records, so the benchmark can say where a batch's time goes
/// without a metrics backend.
final class BenchMetrics: MetricsFactory, Sendable {
    private let totals = Mutex<[String: (sum: Int64, count: Int64)]>([:])

    private final class Handler: CounterHandler, TimerHandler, RecorderHandler, FloatingPointCounterHandler, Sendable {
        let key: String
        let metrics: BenchMetrics
        init(key: String, metrics: BenchMetrics) {
            self.key = key
            self.metrics = metrics
        }
        func increment(by amount: Int64) { metrics.add(key, amount) }
        func increment(by amount: Double) { metrics.add(key, Int64(amount)) }
        func reset() {}
        func recordNanoseconds(_ duration: Int64) { metrics.add(key, duration) }
        func record(_ value: Int64) { metrics.add(key, value) }
        func record(_ value: Double) { metrics.add(key, Int64(value)) }
    }

    private static func key(_ label: String, _ dimensions: [(String, String)]) -> String {
        dimensions.isEmpty ? label : label + "{" + dimensions.map { "\($0.0)=\($0.1)" }.joined(separator: ",") + "}"
    }

    fileprivate func add(_ key: String, _ amount: Int64) {
        totals.withLock { totals in
            let current = totals[key] ?? (0, 0)
            totals[key] = (current.sum + amount, current.count + 1)
        }
    }

    /// (sum, count) of one metric.
    func total(_ label: String, _ dimensions: [(String, String)] = []) -> (sum: Int64, count: Int64) {
        totals.withLock { $0[Self.key(label, dimensions)] ?? (0, 0) }
    }

    /// Every metric whose key starts with `prefix`.
    func all(prefix: String) -> [(key: String, sum: Int64, count: Int64)] {
        totals.withLock { totals in
            totals.filter { $0.key.hasPrefix(prefix) }.map { ($0.key, $0.value.sum, $0.value.count) }.sorted { $0.key < $1.key }
        }
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        Handler(key: Self.key(label, dimensions), metrics: self)
    }
    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        Handler(key: Self.key(label, dimensions), metrics: self)
    }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        Handler(key: Self.key(label, dimensions), metrics: self)
    }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        Handler(key: Self.key(label, dimensions), metrics: self)
    }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}
}
