import Foundation
import Hummingbird
import LivelineAMQP
import LivelineAPNs
import LivelineServices
import LivelineStore
import Logging
import NIOCore
import Prometheus

// Tests: Tests/LivelineRuntimeTests/OpsEndpointsTests.swift, Tests/LivelineRuntimeTests/MultiAppSenderTests.swift

/// One readiness condition of a worker, as `/readyz` reports it.
public struct ReadinessCheck: Sendable, Encodable, Hashable {
    public var name: String
    public var ready: Bool
    public var detail: String

    public init(name: String, ready: Bool, detail: String) {
        self.name = name
        self.ready = ready
        self.detail = detail
    }

    /// Ready when the connection is up; reconnecting or closed is not ready, with the cause.
    public static func broker(_ name: String, _ connection: AMQPConnection) -> ReadinessCheck {
        switch connection.state {
        case .connected: ReadinessCheck(name: name, ready: true, detail: "connected")
        case .connecting: ReadinessCheck(name: name, ready: false, detail: "connecting")
        case .reconnecting(let attempt, let error):
            ReadinessCheck(name: name, ready: false, detail: "reconnecting (attempt \(attempt)): \(error)")
        case .closed: ReadinessCheck(name: name, ready: false, detail: "closed")
        }
    }

    /// Not ready while no push connection is open and the last attempts to open one failed
    /// (a wrong CA file, a refused port): no push could go out.
    public static func apns(_ name: String, _ client: APNsClient) -> ReadinessCheck {
        let status = client.connectionStatus
        if status.isFailing {
            return ReadinessCheck(
                name: name, ready: false,
                detail: "\(status.consecutiveFailures) connection(s) failed before ready; last: \(status.lastFailure ?? "?")")
        }
        return ReadinessCheck(name: name, ready: true, detail: "\(status.openConnections) connection(s) open")
    }

    /// Ready when the store answers a read within `timeout`.
    public static func store(_ store: any ActivityStore, timeout: Duration = .seconds(2)) async -> ReadinessCheck {
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { _ = try await store.activity(id: "liveline.readyz") }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    throw StoreError.backend("no answer within \(timeout)")
                }
                try await group.next()
                group.cancelAll()
            }
            return ReadinessCheck(name: "store", ready: true, detail: "answers")
        } catch {
            return ReadinessCheck(name: "store", ready: false, detail: "\(error)")
        }
    }
}

/// What a worker's ops port serves: `/metrics` (Prometheus text), `/healthz` (the work loop
/// is alive) and `/readyz` (broker and store reachable; the topology is declared before the
/// worker starts and again by every reconnect).
public struct OpsEndpoints: Sendable {
    public var registry: PrometheusCollectorRegistry
    public var health: WorkLoopHealth
    public var readiness: @Sendable () async -> [ReadinessCheck]
    /// Copies the transports' own figures into the registry before each scrape.
    public var gauges: TransportGauges?

    public init(
        registry: PrometheusCollectorRegistry, health: WorkLoopHealth, gauges: TransportGauges? = nil,
        readiness: @escaping @Sendable () async -> [ReadinessCheck]
    ) {
        self.registry = registry
        self.health = health
        self.gauges = gauges
        self.readiness = readiness
    }

    /// The HTTP server, a `Service` to run beside the worker. Port 0 picks a free port, which
    /// `onServerRunning` receives.
    public func application(
        host: String, port: Int, logger: Logger,
        onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let router = Router()
        let endpoints = self
        router.get("/metrics") { _, _ in
            endpoints.gauges?.sample()
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: endpoints.registry.emitToBuffer())))
        }
        router.get("/healthz") { _, _ in
            let status = endpoints.health.status
            let seconds = Double(status.sinceProgress.components.seconds)
                + Double(status.sinceProgress.components.attoseconds) / 1e18
            return Self.json(
                status.alive ? .ok : .serviceUnavailable,
                #"{"status":"\#(status.alive ? "ok" : "stuck")","inFlight":\#(status.inFlight),"secondsSinceProgress":\#(String(format: "%.1f", seconds))}"#)
        }
        router.get("/readyz") { _, _ in
            let checks = await endpoints.readiness()
            let ready = checks.allSatisfy(\.ready)
            struct Body: Encodable {
                var status: String
                var checks: [ReadinessCheck]
            }
            let body = (try? JSONEncoder().encode(Body(status: ready ? "ready" : "not ready", checks: checks))) ?? Data()
            return Self.json(ready ? .ok : .serviceUnavailable, String(decoding: body, as: UTF8.self))
        }
        return Application(
            router: router,
            configuration: .init(address: .hostname(host, port: port), serverName: "liveline-ops"),
            onServerRunning: onServerRunning, logger: logger)
    }

    static func json(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
