import AsyncHTTPClient
import Crypto
import Foundation
import Hummingbird
import LivelineAMQP
import LivelineAPI
import LivelineCodecs
import LivelineCore
import LivelineMessaging
@testable import LivelineRuntime
import LivelineServices
import LivelineStore
import LivelineStoreTestSupport
import LivelineTestSupport
import MetricsTestKit
import NIOCore
import ServiceLifecycle
import Synchronization
import Testing

/// Outcomes on the HTTPS side: the api's relay keeps what `liveline.outcomes` carries for
/// `GET /v1/events/{id}` and posts it, signed, to each producer's webhook; on the real broker,
/// each store, and a webhook receiver served over HTTP.
@Suite(.timeLimit(.minutes(3)))
struct OutcomeWebhookTests {
    static let secret = "a-webhook-secret-of-the-rides-service"

    /// What a webhook receiver was sent, and how it answers: `500` for the first `failures`
    /// requests, then `200`.
    final class Receiver: Sendable {
        struct Request: Sendable {
            var body: Data
            var signature: String?
            var contentType: String?
        }

        let requests = Mutex<[Request]>([])
        let failures: Int

        init(failures: Int) { self.failures = failures }

        /// Serves until `body` returns; the receiver's URL is handed to it.
        func serving<T: Sendable>(_ body: (URL) async throws -> T) async throws -> T {
            let router = Router()
            router.post("/outcomes") { request, _ -> Response in
                let bytes = try await request.body.collect(upTo: 1 << 20)
                let count = self.requests.withLock { requests in
                    requests.append(Request(
                        body: Data(bytes.readableBytesView), signature: request.headers[.init("Liveline-Signature")!],
                        contentType: request.headers[.contentType]))
                    return requests.count
                }
                return Response(status: count <= self.failures ? .internalServerError : .ok)
            }
            let port = Mutex<Int?>(nil)
            let app = Application(
                router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { channel in port.withLock { $0 = channel.localAddress?.port } })
            let group = ServiceGroup(services: [app], logger: Broker.logger)
            let server = Task { try await group.run() }
            defer { server.cancel() }
            var bound: Int?
            for _ in 0..<200 where bound == nil {
                bound = port.withLock { $0 }
                if bound == nil { try await Task.sleep(for: .milliseconds(25)) }
            }
            let result = try await body(URL(string: "http://127.0.0.1:\(try #require(bound))/outcomes")!)
            await group.triggerGracefulShutdown()
            return result
        }

        /// The outcome CloudEvents it accepted (every request after the failing ones).
        var accepted: [[String: Any]] {
            requests.withLock { $0 }.dropFirst(failures).flatMap {
                (try? JSONSerialization.jsonObject(with: $0.body)) as? [[String: Any]] ?? []
            }
        }
    }

    static func outcome(_ kind: EventOutcome.Kind, event: String, domain: String = "ride", key: String) -> (EventOutcome, String) {
        (EventOutcome(kind, eventId: event, domain: domain, activityId: "r-1", reason: kind == .dropped ? "stale" : nil), key)
    }

    /// A failing webhook is posted to again until it answers, with every request signed; a
    /// webhook that never answers is given up, counted, and holds back neither the other
    /// webhook nor `GET /v1/events/{id}`, which shows each outcome once, only to producers
    /// of its domain.
    @Test(arguments: StoreKind.underTest)
    func outcomesReachTheWebhookAndTheEventsRoute(kind: StoreKind) async throws {
        let receiver = Receiver(failures: 1)
        let broken = Receiver(failures: .max)
        try await receiver.serving { url in
            try await broken.serving { brokenURL in
                try await EventIntakeTests.run(kind) { api in
                    let metrics = TestMetrics()
                    let webhooks = WebhookDispatcher(
                        webhooks: [
                            Webhook(producer: .init(name: "rides", keySHA256: "", domains: ["ride"]), url: url, secret: Array(Self.secret.utf8)),
                            Webhook(producer: .init(name: "ops", keySHA256: "", domains: ["*"]), url: brokenURL, secret: Array(Self.secret.utf8)),
                        ],
                        giveUpAfter: .seconds(2), factory: metrics, logger: Broker.logger)
                    let relay = OutcomeRelay(
                        amqp: try Broker.configuration(), topology: api.topology, store: api.store, webhooks: webhooks,
                        logger: Broker.logger)
                    let group = ServiceGroup(services: [webhooks, relay], logger: Broker.logger)
                    let services = Task { try await group.run() }
                    defer { services.cancel() }

                    let connection = try await Broker.connect()
                    let reporter = OutcomeReporter(domains: .all, topology: api.topology, stage: .sender)
                    try await eventually("the relay's queue is bound") {
                        (try? await connection.consumerCount(queue: relay.queue)) == 1
                    }
                    let sent = [
                        Self.outcome(.delivered, event: "e-1", key: "j-1"), Self.outcome(.dropped, event: "e-1", key: "e-1"),
                        Self.outcome(.delivered, event: "e-2", domain: "score", key: "j-2"),
                    ]
                    try await reporter.publish(sent.map { reporter.message($0.0, key: $0.1) }, on: connection)
                    // The same outcome reported again, as after a worker's restart.
                    try await reporter.publish([reporter.message(sent[0].0, key: sent[0].1)], on: connection)

                    try await eventually("the ride outcomes posted after a failure") { receiver.accepted.count >= 2 }
                    let ids = receiver.accepted.compactMap { $0["id"] as? String }
                    #expect(ids.sorted() == ["e-1/dropped", "j-1/delivered"], "only the ride domain's, each once")
                    let requests = receiver.requests.withLock { $0 }
                    #expect(requests.count == 2, "one failure, then one post")
                    for request in requests {
                        #expect(request.contentType == "application/cloudevents-batch+json")
                        let signature = try #require(request.signature)
                        let parts = Dictionary(uniqueKeysWithValues: signature.split(separator: ",").map {
                            let pair = $0.split(separator: "=", maxSplits: 1)
                            return (String(pair[0]), String(pair[1]))
                        })
                        let signed = Data((try #require(parts["t"]) + ".").utf8) + request.body
                        let expected = HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: Data(Self.secret.utf8)))
                        #expect(parts["v1"] == Hex.encode(Array(expected)), "signed with the producer's secret")
                    }

                    let rides = try await Self.get("e-1", api: api, key: EventIntakeTests.ridesKey)
                    #expect(rides.status == 200)
                    let outcomes = try #require(rides.json["outcomes"] as? [[String: Any]])
                    #expect(outcomes.compactMap { $0["id"] as? String }.sorted() == ["e-1/dropped", "j-1/delivered"])
                    #expect((outcomes.first?["data"] as? [String: Any])?["eventId"] as? String == "e-1")
                    #expect(try await Self.get("e-2", api: api, key: EventIntakeTests.ridesKey).status == 404, "another domain's")
                    #expect(try await Self.get("e-2", api: api, key: EventIntakeTests.allKey).status == 200)
                    #expect(try await Self.get("e-9", api: api, key: EventIntakeTests.allKey).status == 404)
                    #expect(try await Self.get("e-1", api: api, key: nil).status == 401)

                    try await eventually("the broken webhook given up") {
                        metrics.counterTotal(label: "liveline_webhook_outcomes_total", dimensions: [("producer", "ops"), ("result", "given-up")]) == 3
                    }
                    #expect(metrics.counterTotal(label: "liveline_webhook_outcomes_total", dimensions: [("producer", "rides"), ("result", "delivered")]) == 2)
                    #expect(broken.requests.withLock { $0.count } >= 2, "tried again before giving up")
                    await group.triggerGracefulShutdown()
                    _ = await services.result
                    try? await connection.delete(queue: relay.queue)
                    await connection.close()
                }
            }
        }
    }

    static func get(_ id: String, api: EventIntakeTests.Harness, key: String?) async throws -> (status: Int, json: [String: Any]) {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(api.port)/v1/events/\(id)")
        if let key { request.headers.add(name: "Authorization", value: "Bearer \(key)") }
        let response = try await api.http.execute(request, timeout: .seconds(10))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), (try? JSONSerialization.jsonObject(with: Data(bytes.readableBytesView))) as? [String: Any] ?? [:])
    }
}
