import LivelineAMQP
import LivelineAPNs
import LivelineServices
import Prometheus
import Synchronization

// Tests: Tests/LivelineRuntimeTests/OpsEndpointsTests.swift, Tests/LivelineRuntimeTests/MultiAppSenderTests.swift

/// Figures that the transports keep themselves (open connections, GOAWAYs, reconnects,
/// provider tokens minted) and the work in flight, copied into the registry on each
/// scrape of `/metrics` rather than counted on the hot path.
///
/// - `liveline_work_in_flight`: events (translator) or sends (sender) being worked on;
/// - `liveline_amqp_reconnects_total{connection}`;
/// - `liveline_apns_connections_open{client}`, `liveline_apns_goaways_total{client}` and
///   `liveline_apns_connections_failed_total{client}` (failed before they were ready);
/// - `liveline_apns_provider_tokens_total{key}`: provider tokens minted (one per 20–60 min
///   per key; more means ExpiredProviderToken refreshes).
public final class TransportGauges: Sendable {
    private let registry: PrometheusCollectorRegistry
    private let health: WorkLoopHealth
    private let brokers: [(name: String, connection: AMQPConnection)]
    private let apns: [(name: String, client: APNsClient)]
    /// Each counter's total at the last scrape, so the next adds only the difference.
    private let reported = Mutex<[String: Int]>([:])

    public init(
        registry: PrometheusCollectorRegistry, health: WorkLoopHealth,
        brokers: [(name: String, connection: AMQPConnection)], apns: [(name: String, client: APNsClient)] = []
    ) {
        self.registry = registry
        self.health = health
        self.brokers = brokers
        self.apns = apns
    }

    /// Brings every figure up to date; `OpsEndpoints` calls it before it answers `/metrics`.
    public func sample() {
        registry.makeGauge(name: "liveline_work_in_flight").set(Int64(health.status.inFlight))
        for (name, connection) in brokers {
            count("liveline_amqp_reconnects_total", "connection", name, total: connection.reconnectCount)
        }
        var signers: [String: Int] = [:]
        for (name, client) in apns {
            let status = client.connectionStatus
            registry.makeGauge(name: "liveline_apns_connections_open", labels: [("client", name)])
                .set(Int64(status.openConnections))
            count("liveline_apns_goaways_total", "client", name, total: status.goAwaysReceived)
            count("liveline_apns_connections_failed_total", "client", name, total: status.connectionsFailed)
            signers[client.tokenSigner.keyID] = client.tokenSigner.mintCount
        }
        for (key, minted) in signers {
            count("liveline_apns_provider_tokens_total", "key", key, total: minted)
        }
    }

    private func count(_ metric: String, _ label: String, _ value: String, total: Int) {
        let key = "\(metric)|\(value)"
        let added = reported.withLock { reported in
            defer { reported[key] = max(total, reported[key] ?? 0) }
            return total - (reported[key] ?? 0)
        }
        let counter = registry.makeCounter(name: metric, labels: [(label, value)])
        if added > 0 { counter.increment(by: Int64(added)) }
    }
}
