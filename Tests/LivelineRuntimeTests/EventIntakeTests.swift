import AsyncHTTPClient
import Crypto
import Foundation
import Hummingbird
import LivelineAMQP
import LivelineAPI
import LivelineChildProcess
import LivelineCodecs
import LivelineCore
import LivelineMessaging
import LivelineModels
import LivelineProducer
import LivelineRuntime
import LivelineStore
import LivelineStoreTestSupport
import LivelineTestSupport
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import Testing

/// `POST /v1/events`: the api, the real broker and each store, with the sink the api role
/// runs. A `202` means the broker confirmed the event, which is then in the translate queue.
@Suite(.timeLimit(.minutes(3)))
struct EventIntakeTests {
    static let ridesKey = "llp_test-key-of-the-rides-service"
    static let allKey = "llp_test-key-of-the-ops-tooling"

    /// A live api on port 0 with its own topology on the test broker.
    struct Harness: Sendable {
        let port: Int
        let topology: LivelineTopology
        let store: any ActivityStore
        let http: HTTPClient

        func post(
            _ body: Data, contentType: String?, key: String? = EventIntakeTests.ridesKey, headers extra: [(String, String)] = [],
            chunked: Bool = false
        ) async throws -> (status: Int, headers: [String: String], json: [String: Any]) {
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/events")
            request.method = .POST
            if let contentType { request.headers.add(name: "Content-Type", value: contentType) }
            if let key { request.headers.add(name: "Authorization", value: "Bearer \(key)") }
            for (name, value) in extra { request.headers.add(name: name, value: value) }
            request.body = chunked
                ? .stream([ByteBuffer(bytes: body)].async, length: .unknown) : .bytes(ByteBuffer(bytes: body))
            let response = try await http.execute(request, timeout: .seconds(30))
            let bytes = try await response.body.collect(upTo: 1 << 20)
            let json = (try? JSONSerialization.jsonObject(with: Data(bytes.readableBytesView))) as? [String: Any] ?? [:]
            var headers: [String: String] = [:]
            for header in response.headers { headers[header.name.lowercased()] = header.value }
            return (Int(response.status.code), headers, json)
        }

        func structured(_ event: LivelineEvent, key: String? = EventIntakeTests.ridesKey) async throws -> (status: Int, headers: [String: String], json: [String: Any]) {
            try await post(try event.encoded(source: "//rides.test"), contentType: "application/cloudevents+json", key: key)
        }

        /// Every message in the translate queue once `count` are there (or after 10 s), taken
        /// off it; then nothing more arrives, so the count is exact.
        func published(expecting count: Int) async throws -> [AMQPDelivery] {
            let connection = try await Broker.connect()
            let queue = topology.translate.queues[0]
            var waiting = 0
            while try await connection.messageCount(queue: queue) < count, waiting < 200 {
                try await Task.sleep(for: .milliseconds(50))
                waiting += 1
            }
            try await Task.sleep(for: .milliseconds(500))
            let total = try await connection.messageCount(queue: queue)
            var deliveries: [AMQPDelivery] = []
            if total > 0 {
                let consumer = try await connection.consume(queue: queue)
                while deliveries.count < total, let batch = try await consumer.nextBatch(maxSize: 100, linger: .milliseconds(50)) {
                    deliveries += batch
                }
                for delivery in deliveries { delivery.ack() }
            }
            await connection.close()
            return deliveries
        }
    }

    static func run(
        _ kind: StoreKind, amqp: AMQPConfiguration? = nil, timeout: Duration = .seconds(5),
        _ body: @Sendable (Harness) async throws -> Void
    ) async throws {
        try await withBroker {
            try await kind.withStore { store in
                let topology = LivelineTopology(prefix: Broker.unique("intake"))
                let admin = try await Broker.connect()
                try await admin.declare(topology.amqp)
                let sink = BrokerEventSink(amqp: try amqp ?? Broker.configuration(), topology: topology, timeout: timeout, logger: Broker.logger)
                let producers = [
                    ProducerCredential(name: "rides", keySHA256: ProducerCredential.digest(ofKey: ridesKey), domains: ["ride"]),
                    ProducerCredential(name: "ops", keySHA256: ProducerCredential.digest(ofKey: allKey), domains: ["*"]),
                ]
                let port = Mutex<Int?>(nil)
                let app = try await buildApplication(
                    configuration: APIConfiguration(
                        host: "127.0.0.1", port: 0,
                        authentication: .init(key: .hs256Secret("a-shared-secret-of-at-least-32-bytes!!"), issuer: "i", audience: "a"),
                        events: EventIntakeConfiguration(
                            translator: Translator(configuration: .standard(bundleId: "com.example.liveline")), producers: producers,
                            sink: sink, maximumBatchEvents: 3, maximumBodyBytes: 64 * 1024, retryAfterSeconds: 2)),
                    store: store, logger: Broker.logger,
                    onServerRunning: { channel in port.withLock { $0 = channel.localAddress?.port } })
                let group = ServiceGroup(services: [app], logger: Broker.logger)
                let server = Task { try await group.run() }
                let http = HTTPClient(eventLoopGroupProvider: .singleton)
                do {
                    var bound: Int?
                    for _ in 0..<200 where bound == nil {
                        bound = port.withLock { $0 }
                        if bound == nil { try await Task.sleep(for: .milliseconds(25)) }
                    }
                    try await body(Harness(port: try #require(bound), topology: topology, store: store, http: http))
                } catch {
                    try? await http.shutdown()
                    await group.triggerGracefulShutdown()
                    _ = await server.result
                    await sink.close()
                    await admin.close()
                    throw error
                }
                try await http.shutdown()
                await group.triggerGracefulShutdown()
                _ = await server.result
                await sink.close()
                for queue in topology.amqp.queues { try? await admin.delete(queue: queue.name) }
                await admin.close()
            }
        }
    }

    static let base = Date(timeIntervalSince1970: 1_900_000_000)

    static func ride(_ id: String, activity: String = "r-1", status: RideStatus = .driverEnRoute, at seconds: Double = 0) throws -> LivelineEvent {
        let eta = Int(base.timeIntervalSince1970) + 600
        return try .ride(
            activityId: activity, userId: "u-1",
            state: RideAttributes.ContentState(
                driverName: "Maria", driverPhoto: "car.fill", vehicleDescription: "White Toyota Camry",
                etaStartSeconds: eta, etaEndSeconds: eta + 300, status: status, distanceRemaining: 3.2),
            id: id, time: base.addingTimeInterval(seconds))
    }

    static func events(_ json: [String: Any]) -> [[String: Any]] {
        json["events"] as? [[String: Any]] ?? []
    }

    /// Structured, binary and batched events each reach the translate queue as the
    /// translator reads them: structured JSON, message id = event id, the activity header.
    @Test(arguments: StoreKind.underTest)
    func eachModeIsPublishedAsTheTranslatorReadsIt(kind: StoreKind) async throws {
        try await Self.run(kind) { api in
            let single = try await api.structured(try Self.ride("e-structured"))
            #expect(single.status == 202)
            #expect(Self.events(single.json).first?["status"] as? String == "accepted")

            let event = try Self.ride("e-binary", activity: "r-2", at: 1)
            let data = JSONValue.encoded(event.data)
            let binary = try await api.post(data, contentType: "application/json", headers: [
                ("ce-specversion", "1.0"), ("ce-id", "e-binary"), ("ce-source", "%2F%2Frides.test"), ("ce-type", "ride.status"),
                ("ce-time", "2030-03-17T17:46:41.000Z"), ("ce-subject", "r-2"),
            ])
            #expect(binary.status == 202, "\(binary.json)")

            let batch = try [Self.ride("e-b1", activity: "r-3", at: 2), Self.ride("e-b2", activity: "r-3", at: 3)]
            let body = Data("[".utf8) + (try batch.map { try $0.encoded(source: "//rides.test") }.joined(separator: Data(",".utf8))) + Data("]".utf8)
            let batched = try await api.post(body, contentType: "application/cloudevents-batch+json")
            #expect(batched.status == 202)
            #expect(Self.events(batched.json).map { $0["id"] as? String } == ["e-b1", "e-b2"])

            let deliveries = try await api.published(expecting: 4)
            #expect(deliveries.map(\.properties.messageID) == ["e-structured", "e-binary", "e-b1", "e-b2"])
            let translator = Translator(configuration: .standard(bundleId: "com.example.liveline"))
            for delivery in deliveries {
                let parsed = try translator.parse(delivery.body)
                #expect(delivery.properties.contentType == "application/cloudevents+json")
                #expect(delivery.properties.headers[LivelineTopology.activityHeader] == .string(parsed.activityId))
                #expect(delivery.routingKey == "ride.status")
            }
            let binaryEvent = try translator.parse(deliveries[1].body)
            #expect(binaryEvent.envelope.source == "//rides.test", "header values are percent-decoded")
            #expect(binaryEvent.envelope.subject == "r-2")
        }
    }

    /// The id is the idempotency key: the same body again publishes nothing new; another
    /// body under it is refused with 409, and nothing of that request is published.
    @Test(arguments: StoreKind.underTest)
    func aRepeatedIdPublishesNothingNewAndAnotherBodyIsAConflict(kind: StoreKind) async throws {
        try await Self.run(kind) { api in
            let event = try Self.ride("e-1")
            #expect(try await api.structured(event).status == 202)
            let again = try await api.structured(event)
            #expect(again.status == 202)
            #expect(Self.events(again.json).first?["status"] as? String == "duplicate")

            let changed = try Self.ride("e-1", status: .driverArrived)
            let conflict = try await api.structured(changed)
            #expect(conflict.status == 409)
            #expect((conflict.json["error"] as? [String: Any])?["code"] as? String == "event-id-conflict")

            // A batch with one conflicting id publishes none of its events.
            let batch = try [Self.ride("e-2", at: 1), changed]
            let body = Data("[".utf8) + (try batch.map { try $0.encoded(source: "//rides.test") }.joined(separator: Data(",".utf8))) + Data("]".utf8)
            let refused = try await api.post(body, contentType: "application/cloudevents-batch+json")
            #expect(refused.status == 409)
            #expect(Self.events(refused.json).map { $0["index"] as? Int } == [1])

            #expect(try await api.published(expecting: 1).map(\.properties.messageID) == ["e-1"])
            // e-2 was claimed but not published: sent alone, it is published now.
            #expect(try await api.structured(try Self.ride("e-2", at: 1)).status == 202)
            #expect(try await api.published(expecting: 1).map(\.properties.messageID) == ["e-2"])
        }
    }

    /// Producers have their own keys, scoped to domains; an app's user token is not one.
    @Test func producersAreAuthenticatedAndScopedToTheirDomains() async throws {
        try await Self.run(.sqlite) { api in
            let event = try Self.ride("e-1")
            let missing = try await api.structured(event, key: nil)
            #expect(missing.status == 401)
            #expect(missing.headers["www-authenticate"] != nil)
            #expect(try await api.structured(event, key: "llp_not-a-key").status == 401)

            let score = LivelineEvent(
                id: "s-1", domain: "score", name: "update", time: Self.base,
                data: .object([
                    "activityId": .string("g-1"),
                    "contentState": try JSONValue.parse(Data(#"{"homeScore":1,"awayScore":0,"clock":"12:00","period":"Q1","status":"live"}"#.utf8)),
                ]))
            let forbidden = try await api.structured(score)
            #expect(forbidden.status == 403, "\(forbidden.json)")
            #expect((forbidden.json["error"] as? [String: Any])?["code"] as? String == "forbidden-domain")
            #expect(Self.events(forbidden.json).first?["id"] as? String == "s-1")
            #expect(try await api.published(expecting: 0).isEmpty)
        }
    }

    /// What the translator would dead-letter is refused with 400 and a reason per event;
    /// bad requests get a 4xx that names the problem.
    @Test func badInputIsRefusedNamingTheProblem() async throws {
        try await Self.run(.sqlite) { api in
            let good = try Self.ride("e-good").encoded(source: "//rides.test")
            let unknownDomain = Data(#"{"specversion":"1.0","id":"e-x","source":"//t","type":"pizza.status","time":"2030-01-01T00:00:00Z","data":{"activityId":"p","userId":"u","contentState":{}}}"#.utf8)
            var badState = try JSONValue.parse(try Self.ride("e-schema").encoded(source: "//rides.test"))
            if case .object(var envelope) = badState, case .object(var data) = envelope["data"] {
                guard case .object(var state) = data["contentState"] else { return }
                state["distanceRemaining"] = .string("far")
                data["contentState"] = .object(state)
                envelope["data"] = .object(data)
                badState = .object(envelope)
            }
            let tooBold = try Self.ride("e-override").overriding(EventOverrides(relevanceScore: 1e9)).encoded(source: "//rides.test")
            let body = Data("[".utf8) + [good, unknownDomain, JSONValue.encoded(badState)].joined(separator: Data(",".utf8)) + Data("]".utf8)
            let refused = try await api.post(body, contentType: "application/cloudevents-batch+json")
            #expect(refused.status == 400)
            let problems = Self.events(refused.json)
            #expect(problems.map { $0["index"] as? Int } == [1, 2])
            #expect(problems.map { $0["reason"] as? String } == ["invalid-event", "schema-mismatch"])
            #expect((problems.first?["message"] as? String)?.contains("unknown domain \"pizza\"") == true)

            let override = try await api.post(tooBold, contentType: "application/cloudevents+json")
            #expect(override.status == 400)
            #expect(Self.events(override.json).first?["reason"] as? String == "invalid-override")

            let notJSON = try await api.post(Data("{nope".utf8), contentType: "application/cloudevents+json")
            #expect(notJSON.status == 400)
            #expect((Self.events(notJSON.json).first?["message"] as? String)?.contains("not JSON") == true)

            let wrongType = try await api.post(good, contentType: "text/plain")
            #expect(wrongType.status == 415)
            let notArray = try await api.post(good, contentType: "application/cloudevents-batch+json")
            #expect(notArray.status == 400)
            let four = Data("[".utf8) + Array(repeating: good, count: 4).joined(separator: Data(",".utf8)) + Data("]".utf8)
            let overCount = try await api.post(four, contentType: "application/cloudevents-batch+json")
            #expect(overCount.status == 413)
            #expect((overCount.json["error"] as? [String: Any])?["code"] as? String == "batch-too-large")
            let twice = Data("[".utf8) + [good, good].joined(separator: Data(",".utf8)) + Data("]".utf8)
            let repeated = try await api.post(twice, contentType: "application/cloudevents-batch+json")
            #expect(repeated.status == 400)
            #expect(Self.events(repeated.json).first?["reason"] as? String == "repeated-id")
            let huge = try await api.post(Data(repeating: UInt8(ascii: " "), count: 65 * 1024), contentType: "application/cloudevents+json")
            #expect(huge.status == 413)
            let hugeChunked = try await api.post(
                Data(repeating: UInt8(ascii: " "), count: 65 * 1024), contentType: "application/cloudevents+json", chunked: true)
            #expect(hugeChunked.status == 413)
            #expect((hugeChunked.json["error"] as? [String: Any])?["message"] as? String == "the request body is larger than 65536 bytes")
            #expect(try await api.published(expecting: 0).isEmpty, "nothing of a refused request is published")
        }
    }

    /// A broker that is not there: `503` with `Retry-After`, never `202`; and nothing is
    /// remembered as published, so the retry, once the broker is back, publishes it.
    @Test func aBrokerThatIsDownGets503WithRetryAfter() async throws {
        var nowhere = try Broker.configuration()
        nowhere.port = try Self.closedPort()
        try await Self.run(.sqlite, amqp: nowhere, timeout: .seconds(2)) { api in
            let event = try Self.ride("e-1")
            let answer = try await api.structured(event)
            #expect(answer.status == 503)
            #expect(answer.headers["retry-after"] == "2")
            #expect((answer.json["error"] as? [String: Any])?["code"] as? String == "broker-unavailable")
            // The id is claimed with the event's digest, but not as published: a retry publishes.
            let digest = Hex.encode(Array(SHA256.hash(data: try event.encoded(source: "//rides.test"))))
            #expect(try await api.store.claimEvents([EventClaim(eventID: "e-1", producer: "rides", digest: digest)], now: Date()) == [.publish])
        }
    }

    /// A broker that blocks publishing (a memory alarm) is slow: `503` after the timeout;
    /// once it unblocks, the same request gets its `202` and the event is in the queue.
    @Test func aBrokerThatBlocksPublishingGets503ThenTheRetryIsAccepted() async throws {
        try await withBroker(exclusive: true) {
            try await Self.run(.sqlite, timeout: .seconds(2)) { api in
                let event = try Self.ride("e-1")
                #expect(try await api.structured(event).status == 202, "the sink's connection is open before the alarm")
                try await Broker.control("alarm", "on")
                do {
                    let blocked = try await api.structured(try Self.ride("e-2", at: 1))
                    #expect(blocked.status == 503)
                    #expect(blocked.headers["retry-after"] == "2")
                } catch {
                    try await Broker.control("alarm", "off")
                    throw error
                }
                try await Broker.control("alarm", "off")
                var retried = try await api.structured(try Self.ride("e-2", at: 1))
                for _ in 0..<20 where retried.status == 503 {
                    try await Task.sleep(for: .milliseconds(500))
                    retried = try await api.structured(try Self.ride("e-2", at: 1))
                }
                #expect(retried.status == 202)
                let ids = try await api.published(expecting: 2).compactMap(\.properties.messageID)
                // The blocked publish may land too, once unblocked: the translator drops that copy.
                #expect(Set(ids) == ["e-1", "e-2"])
                #expect(ids.first == "e-1")
            }
        }
    }

    /// docs/examples/producer.py, run against the api as a Python service would run it.
    @Test func thePythonExampleProducerPublishesThroughTheAPI() async throws {
        try await Self.run(.sqlite) { api in
            let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../../docs/examples/producer.py").standardized.path
            let output = FileManager.default.temporaryDirectory.appendingPathComponent("producer-\(UUID().uuidString).txt").path
            defer { try? FileManager.default.removeItem(atPath: output) }
            let status = try await ChildProcess.start(
                "/usr/bin/python3", arguments: [example, "--url", "http://127.0.0.1:\(api.port)", "--key", Self.ridesKey, "--activity", "r-py"],
                output: output
            ).exited()
            let lines = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n").map(String.init)
            #expect(status == 0, "\(lines)")
            #expect(lines.map { $0.split(separator: " ").last.map(String.init) } == ["accepted", "accepted", "accepted", "duplicate"], "\(lines)")
            let deliveries = try await api.published(expecting: 3)
            #expect(deliveries.count == 3)
            #expect(deliveries.allSatisfy { $0.properties.headers[LivelineTopology.activityHeader] == .string("r-py") })
            #expect(lines.first?.contains(deliveries.first?.properties.messageID ?? "none") == true)
        }
    }

    /// A port nothing listens on: tcpmux's, privileged and unused.
    static func closedPort() throws -> Int { 1 }
}
