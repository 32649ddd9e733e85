import Histogram
import Metrics
import Synchronization

// Tests: scripts/bench-smoke

/// A metrics backend that records the sender's send-duration timer into an HdrHistogram
/// and counts finished pushes; every other metric is discarded.
final class LatencyMetrics: MetricsFactory, Sendable {
    let histogram = Mutex(Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three))
    let finished = Atomic<Int>(0)

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        label == "liveline_sender_pushes_total" ? FinishedCounter(metrics: self) : Discard()
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler { Discard() }
    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler { Discard() }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler { Discard() }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        label == "liveline_sender_send_duration_seconds" ? SendTimer(metrics: self) : Discard()
    }

    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {}
    func destroyMeter(_ handler: any MeterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}

    func record(nanoseconds: Int64) {
        histogram.withLock { _ = $0.record(UInt64(max(0, nanoseconds))) }
    }

    private final class SendTimer: TimerHandler, Sendable {
        init(metrics: LatencyMetrics) { self.metrics = metrics }
        let metrics: LatencyMetrics
        func recordNanoseconds(_ duration: Int64) { metrics.record(nanoseconds: duration) }
    }

    private final class FinishedCounter: CounterHandler, Sendable {
        init(metrics: LatencyMetrics) { self.metrics = metrics }
        let metrics: LatencyMetrics
        func increment(by amount: Int64) { metrics.finished.add(Int(amount), ordering: .relaxed) }
        func reset() {}
    }

    private final class Discard: CounterHandler, FloatingPointCounterHandler, MeterHandler, RecorderHandler, TimerHandler, Sendable {
        func increment(by amount: Int64) {}
        func increment(by amount: Double) {}
        func reset() {}
        func set(_ value: Int64) {}
        func set(_ value: Double) {}
        func decrement(by amount: Double) {}
        func record(_ value: Int64) {}
        func record(_ value: Double) {}
        func recordNanoseconds(_ duration: Int64) {}
    }
}
