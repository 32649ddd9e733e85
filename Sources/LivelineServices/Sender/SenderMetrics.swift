import CoreMetrics
import Metrics
import Synchronization

// Tests: Tests/LivelineServicesTests/SenderRetryTests.swift, Tests/LivelineRuntimeTests/MultiAppSenderTests.swift

/// The sender's metrics (swift-metrics), created once so the hot path only increments.
///
/// - `liveline_sender_pushes_total{outcome, reason}`: every finished job.
/// - `liveline_sender_send_duration_seconds`: APNs round trip of each send.
/// - `liveline_e2e_latency_seconds`: from the event's time to APNs' 200, per delivered push.
/// - `liveline_sender_queue_wait_seconds`: from the translator's publish to the sender taking the job.
/// - `liveline_sender_retries_total{tier}`: jobs sent to a retry tier.
/// - `liveline_sender_dead_letters_total{reason}`: jobs dead-lettered.
/// - `liveline_sender_dropped_total{reason}`: jobs dropped before sending (expired, superseded).
/// - `liveline_sender_trace_failures_total`: trace entries whose commit failed.
/// - `liveline_sender_record_failures_total`: jobs requeued because their outcome could not be recorded.
final class SenderMetrics: Sendable {
    private let factory: any MetricsFactory
    private let delivered: Counter
    private let sendDuration: Metrics.Timer
    private let endToEnd: Metrics.Timer
    private let queueWait: Metrics.Timer
    private let traceFailures: Counter
    private let recordFailures: Counter
    // Rare outcomes: created on first use and cached, keyed by their dimensions.
    private let counters = Mutex<[String: Counter]>([:])

    init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
        delivered = Counter(label: "liveline_sender_pushes_total", dimensions: [("outcome", "delivered"), ("reason", "")], factory: factory)
        sendDuration = Metrics.Timer(label: "liveline_sender_send_duration_seconds", factory: factory)
        endToEnd = Metrics.Timer(label: "liveline_e2e_latency_seconds", factory: factory)
        queueWait = Metrics.Timer(label: "liveline_sender_queue_wait_seconds", factory: factory)
        traceFailures = Counter(label: "liveline_sender_trace_failures_total", factory: factory)
        recordFailures = Counter(label: "liveline_sender_record_failures_total", factory: factory)
    }

    func sent(durationNanoseconds: Int64) {
        sendDuration.recordNanoseconds(durationNanoseconds)
    }

    /// A push APNs accepted, for the end-to-end latency: the event's time, in Unix ms, to now.
    func delivered(eventMilliseconds: Int64, nowMilliseconds: Int64) {
        endToEnd.recordNanoseconds(max(0, nowMilliseconds - eventMilliseconds) * 1_000_000)
    }

    /// A first attempt taken off the send queue: from the translator's publish to now.
    func waited(publishedMilliseconds: Int64, nowMilliseconds: Int64) {
        queueWait.recordNanoseconds(max(0, nowMilliseconds - publishedMilliseconds) * 1_000_000)
    }

    func finished(_ outcome: String, reason: String = "") {
        if outcome == "delivered" {
            delivered.increment()
        } else {
            counter("liveline_sender_pushes_total", [("outcome", outcome), ("reason", reason)]).increment()
        }
    }

    func retried(tier: String) {
        counter("liveline_sender_retries_total", [("tier", tier)]).increment()
    }

    func deadLettered(reason: String) {
        counter("liveline_sender_dead_letters_total", [("reason", reason)]).increment()
    }

    func dropped(reason: String) {
        counter("liveline_sender_dropped_total", [("reason", reason)]).increment()
    }

    func traceFailed(count: Int) {
        traceFailures.increment(by: count)
    }

    func recordFailed() {
        recordFailures.increment()
    }

    private func counter(_ label: String, _ dimensions: [(String, String)]) -> Counter {
        let key = label + dimensions.map { "|\($0.0)=\($0.1)" }.joined()
        return counters.withLock { cache in
            if let counter = cache[key] { return counter }
            let counter = Counter(label: label, dimensions: dimensions, factory: factory)
            cache[key] = counter
            return counter
        }
    }
}
