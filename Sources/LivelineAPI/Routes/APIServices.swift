import LivelineStore
import Prometheus

/// What handlers share: the store, the body reader and the metrics registry.
struct APIServices: Sendable {
    let store: any ActivityStore
    let body: JSONBody
    let registry: PrometheusCollectorRegistry
}
