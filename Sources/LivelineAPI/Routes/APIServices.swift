import LivelineStore
import Prometheus

/// What handlers share: the store, the body reader, the metrics registry, and what the
/// deployment's domains say (topic kinds, shared domains).
struct APIServices: Sendable {
    let store: any ActivityStore
    let body: JSONBody
    let registry: PrometheusCollectorRegistry
    /// ``APIConfiguration/topicKinds``.
    let topicKinds: [String]
    /// ``APIConfiguration/sharedDomains``.
    let sharedDomains: Set<String>

    /// The activity, if it belongs to a shared domain: anyone may follow those.
    func sharedActivity(_ id: String) async throws -> ActivityRecord? {
        guard let activity = try await store.activity(id: id), sharedDomains.contains(activity.domain) else { return nil }
        return activity
    }
}
