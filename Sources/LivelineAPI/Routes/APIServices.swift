import LivelineStore
import Prometheus

/// What handlers share: the store, the body reader, the metrics registry and the topic kinds.
struct APIServices: Sendable {
    let store: any ActivityStore
    let body: JSONBody
    let registry: PrometheusCollectorRegistry
    /// ``APIConfiguration/topicKinds``.
    var topicKinds: [String] = APIConfiguration.defaultTopicKinds
}
