import Prometheus
import Synchronization

/// The api's side of events over HTTPS: its configuration, who its producers are, and its counts.
struct EventIntake: Sendable {
    let configuration: EventIntakeConfiguration
    let authenticator: ProducerAuthenticator
    let metrics: EventIntakeMetrics

    init(_ configuration: EventIntakeConfiguration, registry: PrometheusCollectorRegistry) {
        self.configuration = configuration
        authenticator = ProducerAuthenticator(configuration.producers)
        metrics = EventIntakeMetrics(registry: registry)
    }
}

/// `liveline_api_events_total{producer, outcome}`: what became of the events producers sent.
final class EventIntakeMetrics: Sendable {
    private let registry: PrometheusCollectorRegistry
    private let counters = Mutex<[String: Counter]>([:])

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    func count(producer: String, outcome: String, events: Int) {
        guard events > 0 else { return }
        let key = producer + " " + outcome
        let counter = counters.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = registry.makeCounter(
                descriptor: MetricNameDescriptor(
                    namespace: "liveline", subsystem: "api", metricName: "events", unitName: "total",
                    helpText: "Events producers sent over HTTPS, by producer and outcome: accepted, duplicate, conflict, unavailable."),
                labels: [("producer", producer), ("outcome", outcome)])
            counters[key] = counter
            return counter
        }
        counter.increment(by: Int64(events))
    }
}
