import Hummingbird
import Prometheus
import Synchronization

// Tests: Tests/LivelineAPITests/LimitTests.swift, Tests/LivelineAPITests/AuthenticationTests.swift

/// Counts requests and their durations per route template and status, into the api's own
/// registry rather than a global metrics system, so tests and several apps stay apart.
struct RequestMetricsMiddleware: RouterMiddleware {
    typealias Context = APIRequestContext

    let metrics: RequestMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let response = try await next(request, context)
        // The template, never the raw path: raw paths carry ids and would explode the label set.
        let route = context.endpointPath ?? "unmatched"
        metrics.record(method: request.method.rawValue, route: route, status: response.status.code, duration: ContinuousClock.now - start)
        return response
    }
}

/// The api's request metrics, with the collectors cached per label set: looking one up in
/// the registry on every request costs more than the rest of the bookkeeping.
final class RequestMetrics: Sendable {
    private let registry: PrometheusCollectorRegistry
    private let counters = Mutex<[String: Counter]>([:])
    private let histograms = Mutex<[String: DurationHistogram]>([:])
    private let refusals = Mutex<[String: Counter]>([:])
    private let events = Mutex<[String: Counter]>([:])
    static let buckets: [Duration] = [
        .milliseconds(1), .milliseconds(5), .milliseconds(25), .milliseconds(100), .milliseconds(500), .seconds(2),
    ]

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    func record(method: String, route: String, status: Int, duration: Duration) {
        counter(
            MetricNameDescriptor(
                namespace: "liveline", subsystem: "api", metricName: "requests", unitName: "total",
                helpText: "Requests answered, by method, route template and status."),
            labels: [("method", method), ("route", route), ("status", String(status))], in: counters
        ).increment()
        let histogram = histograms.withLock { histograms in
            if let histogram = histograms[route] { return histogram }
            let histogram = registry.makeDurationHistogram(
                descriptor: MetricNameDescriptor(
                    namespace: "liveline", subsystem: "api", metricName: "request_duration", unitName: "seconds",
                    helpText: "Time to answer a request, by route template."),
                labels: [("route", route)], buckets: Self.buckets)
            histograms[route] = histogram
            return histogram
        }
        histogram.record(duration)
    }

    /// A request a limit refused (``APIError/limit``): 429, 413 or 409.
    func refused(route: String, reason: String) {
        counter(
            MetricNameDescriptor(
                namespace: "liveline", subsystem: "api", metricName: "refusals", unitName: "total",
                helpText: "Requests a limit refused, by route template and limit."),
            labels: [("route", route), ("reason", reason)], in: refusals
        ).increment()
    }

    /// Events a producer sent over HTTPS, by what became of them.
    func events(producer: String, outcome: String, count: Int) {
        guard count > 0 else { return }
        counter(
            MetricNameDescriptor(
                namespace: "liveline", subsystem: "api", metricName: "events", unitName: "total",
                helpText: "Events producers sent over HTTPS, by producer and outcome: accepted, duplicate, conflict, unavailable."),
            labels: [("producer", producer), ("outcome", outcome)], in: events
        ).increment(by: Int64(count))
    }

    /// The counter of `descriptor` with these labels, made once and then taken from `cache`.
    /// (The descriptors are written out where they are used: scripts/validate-deploy reads
    /// the metric names from them.)
    private func counter(
        _ descriptor: MetricNameDescriptor, labels: [(String, String)], in cache: borrowing Mutex<[String: Counter]>
    ) -> Counter {
        cache.withLock { counters in
            let key = labels.map(\.1).joined(separator: " ")
            if let counter = counters[key] { return counter }
            let counter = registry.makeCounter(descriptor: descriptor, labels: labels)
            counters[key] = counter
            return counter
        }
    }
}
