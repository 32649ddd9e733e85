import Foundation
import LivelineAMQP
import LivelineAPNs
import LivelineCodecs
import LivelineCore
import LivelineModels
import LivelineProducer
import LivelineServices
import LivelineStore
import LivelineStoreTestSupport
import LivelineTestSupport
import Testing

/// The translator end to end: real RabbitMQ, real SQLite store, producer library in,
/// push jobs and dead letters out. No mocks.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct TranslatorServiceTests {
    @Test(arguments: StoreKind.underTest)
    func rideLifecycleProducesTheCoresExactJobs(store: StoreKind) async throws {
        try await withBroker {
            try await TranslatorHarness.run(store: store) { harness, _ in
                try await harness.registerUpdateToken(Events.tokenA, activity: "r-1", user: "u-9")
                let events = [
                    try Events.ride("r-1", .driverAssigned, at: 0, attributes: true),
                    try Events.ride("r-1", .driverArrived, at: 60),
                    try Events.ride("r-1", .completed, at: 120),
                ]
                let expected = try Events.expectedJobs(events, tokens: TokenSnapshot(updateTokens: [Events.tokenA]))
                    .flatMap { $0 }
                try #require(expected.count == 3)

                // One at a time, so each lands in its own batch and the store carries the state.
                let sendQueue = try await harness.control.consume(queue: harness.topology.sendQueues[0], prefetch: 10)
                var received: [PushJob] = []
                for event in events {
                    try await harness.publisher.publish(event)
                    received += try await harness.jobs(1, consumer: sendQueue).map(\.job)
                }
                await sendQueue.close()

                #expect(received.map(\.jobId) == expected.map(\.jobId))
                #expect(received.map(\.payload) == expected.map(\.payload))
                #expect(received.map(\.priority) == expected.map(\.priority))
                #expect(received.map(\.event) == [.update, .update, .end])
                #expect(received.allSatisfy { $0.target == .device(token: Events.tokenA, kind: .update) })
                #expect(received[1].priority == .high)  // driver arrived: alert, priority 10
            }
        }
    }

    @Test func jobMessagesCarryIdRoutingKeyAndHeaders() async throws {
        try await withBroker {
            try await TranslatorHarness.run { harness, _ in
                try await harness.registerUpdateToken(Events.tokenA, activity: "r-2", user: "u-9")
                try await harness.publisher.publish(try Events.ride("r-2", .driverAssigned, at: 0))
                let sendQueue = try await harness.control.consume(queue: harness.topology.sendQueues[0], prefetch: 10)
                let (job, delivery) = try #require(try await harness.jobs(1, consumer: sendQueue).first)
                await sendQueue.close()
                #expect(delivery.properties.messageID == job.jobId)
                #expect(delivery.routingKey == harness.topology.sendRoutingKey(shard: 0))
                #expect(delivery.properties.persistent)
                #expect(delivery.properties.headers[TranslatorHeaders.activity]?.stringValue == "r-2")
                #expect(delivery.properties.headers[TranslatorHeaders.sequence]?.intValue == job.sequence)
            }
        }
    }

    @Test func invalidEventsAreDeadLetteredWithReasonAndOriginalBody() async throws {
        try await withBroker {
            try await TranslatorHarness.run { harness, _ in
                let valid = try Events.ride("r-3", .driverAssigned, at: 0).encoded(source: "//tests")
                let unknownDomain = Data(String(decoding: valid, as: UTF8.self)
                    .replacingOccurrences(of: "\"ride.status\"", with: "\"boat.status\"").utf8)
                let badState = Data(String(decoding: valid, as: UTF8.self)
                    .replacingOccurrences(of: "\"distanceRemaining\":3.2", with: "\"distanceRemaining\":\"far\"").utf8)
                try #require(unknownDomain != valid && badState != valid)
                let cases: [(body: Data, reason: String, domain: String?)] = [
                    (Data("not json at all".utf8), "invalid-event", nil),
                    (Data(#"[{"specversion":"1.0"}]"#.utf8), "invalid-event", nil),
                    (unknownDomain, "invalid-event", "boat"),
                    (badState, "schema-mismatch", "ride"),
                ]
                for item in cases { try await harness.publishRaw(item.body, routingKey: "ride.status") }

                let deadQueue = try await harness.control.consume(queue: harness.topology.deadQueue, prefetch: 10)
                let letters = try await receive(cases.count, from: deadQueue)
                for letter in letters { letter.ack() }
                await deadQueue.close()
                for (item, delivery) in zip(cases, letters) {
                    let letter = try JSONDecoder().decode(DeadLetter.self, from: delivery.body)
                    #expect(letter.originalBody == item.body)
                    #expect(letter.reason.rawValue == item.reason)
                    #expect(delivery.properties.headers[TranslatorHeaders.reason]?.stringValue == item.reason)
                    #expect(delivery.properties.headers[TranslatorHeaders.domain]?.stringValue == item.domain)
                    #expect(letter.attempts == 1)
                }
                #expect(letters[3].properties.headers[TranslatorHeaders.activity]?.stringValue == "r-3")
                #expect(try await harness.control.messageCount(queue: harness.topology.sendQueues[0]) == 0)
                let metrics = harness.metrics
                try await eventually("counters") {
                    metrics.total("liveline_translator_events_dead_lettered_total", [("reason", "invalid-event")]) == 3
                        && metrics.total("liveline_translator_events_dead_lettered_total", [("reason", "schema-mismatch")]) == 1
                }
                #expect(metrics.total("liveline_translator_events_received_total") == 4)
                #expect(metrics.total("liveline_translator_jobs_published_total") == 0)
            }
        }
    }

    @Test(arguments: StoreKind.underTest)
    func staleDuplicateAndAfterEndEventsProduceNoJob(store: StoreKind) async throws {
        try await withBroker {
            try await TranslatorHarness.run(store: store) { harness, _ in
                try await harness.registerUpdateToken(Events.tokenA, activity: "r-4", user: "u-9")
                try await harness.registerUpdateToken(Events.tokenA, activity: "r-5", user: "u-9")
                let sendQueue = harness.topology.sendQueues[0]
                try await harness.publisher.publish(try Events.ride("r-4", .driverEnRoute, at: 60))
                try await eventually("first job") { try await harness.control.messageCount(queue: sendQueue) == 1 }

                // Older, then the same event again, then an end and an update after it.
                try await harness.publisher.publish(try Events.ride("r-4", .driverAssigned, at: 30))
                try await harness.publisher.publish(try Events.ride("r-4", .driverEnRoute, at: 60))
                try await harness.publisher.publish(try Events.ride("r-4", .cancelled, at: 90))
                try await eventually("end job") { try await harness.control.messageCount(queue: sendQueue) == 2 }
                try await harness.publisher.publish(try Events.ride("r-4", .driverArrived, at: 120))
                // Another activity's event behind them: once its job is there, the others were handled.
                try await harness.publisher.publish(try Events.ride("r-5", .driverAssigned, at: 0))
                try await eventually("sentinel job") { try await harness.control.messageCount(queue: sendQueue) >= 3 }
                try await Task.sleep(for: .milliseconds(200))

                let consumer = try await harness.control.consume(queue: sendQueue, prefetch: 10)
                let jobs = try await harness.jobs(3, consumer: consumer).map(\.job)
                await consumer.close()
                #expect(jobs.map(\.activityId) == ["r-4", "r-4", "r-5"])
                #expect(jobs.map(\.event) == [.update, .end, .update])
                #expect(try await harness.control.messageCount(queue: harness.topology.deadQueue) == 0)
                // Stale, duplicate (or superseded, when they shared a batch) and after-end.
                let dropped = ["stale", "duplicate", "superseded", "afterEnd"].map {
                    harness.metrics.total("liveline_translator_events_dropped_total", [("reason", $0)])
                }
                #expect(dropped.reduce(0, +) == 3)
                #expect(harness.metrics.total("liveline_translator_events_dropped_total", [("reason", "afterEnd")]) == 1)
            }
        }
    }

    /// The store keeps the last event's id and status, so what happened in an earlier batch
    /// is known exactly: a redelivered copy is a duplicate (not stale), and a generic
    /// domain's entry alert fires once, not on every update in the same status.
    @Test(arguments: StoreKind.underTest)
    func earlierBatchesAreRememberedExactly(store: StoreKind) async throws {
        try await withBroker {
            try await TranslatorHarness.run(store: store) { harness, _ in
                try await harness.registerUpdateToken(Events.tokenA, activity: "r-8", user: "u-9")
                try await harness.registerUpdateToken(Events.tokenA, activity: "f-1", user: "u-9", domain: "flight")
                // A batch's jobs for one shard share a message, so jobs are counted as published.
                let published = { harness.metrics.total("liveline_translator_jobs_published_total") }
                let first = try Events.ride("r-8", .driverEnRoute, at: 60)
                try await harness.publisher.publish(first)
                try await harness.publisher.publish(Events.flight("f-1", "boarding", gate: "A1", at: 60))
                try await eventually("first jobs") { published() == 2 }

                try await harness.publisher.publish(first)
                try await harness.publisher.publish(Events.flight("f-1", "boarding", gate: "A2", at: 70))
                try await eventually("gate change job") { published() == 3 }
                try await eventually("duplicate counted") {
                    harness.metrics.total("liveline_translator_events_dropped_total", [("reason", "duplicate")]) == 1
                }
                #expect(harness.metrics.total("liveline_translator_events_dropped_total", [("reason", "stale")]) == 0)

                let flights = try await harness.takeQueuedJobs().filter { $0.domain == "flight" }
                let alerts = try flights.map { try JSONValue.parse($0.payload)["aps"]?["alert"] }
                #expect(flights.count == 2)
                #expect(alerts[0]?["body"] == .string("Gate A1"))
                #expect(alerts[1] == nil, "the second boarding update must not buzz again")
                #expect(flights.map(\.priority) == [.high, .low])
            }
        }
    }

    @Test(arguments: StoreKind.underTest)
    func pushToStartSendsAStartAndTheTokenServesTheNextActivityToo(store: StoreKind) async throws {
        try await withBroker {
            try await TranslatorHarness.run(store: store) { harness, _ in
                try await harness.store.registerPushToStartToken(PushToStartToken(
                    userID: "u-7", attributesType: "RideAttributes", token: Events.startToken, registeredAt: Date()))
                let event = try Events.ride("r-6", user: "u-7", .driverAssigned, at: 0, attributes: true)
                let expected = try Events.expectedJobs([event], tokens: TokenSnapshot(pushToStartTokens: [Events.startToken]))
                    .flatMap { $0 }
                try await harness.publisher.publish(event)

                let consumer = try await harness.control.consume(queue: harness.topology.sendQueues[0], prefetch: 10)
                let job = try #require(try await harness.jobs(1, consumer: consumer).first?.job)
                await consumer.close()
                #expect(job.event == .start)
                #expect(job.target == .device(token: Events.startToken, kind: .pushToStart))
                #expect(job.payload == expected.first?.payload)
                let payload = try JSONValue.parse(job.payload)
                #expect(payload["aps"]?["input-push-token"] == .integer(1))
                #expect(payload["aps"]?["alert"] != nil)

                // The same token starts the user's next ride: APNs documents no single use.
                try await harness.publisher.publish(try Events.ride("r-7", user: "u-7", .driverAssigned, at: 1, attributes: true))
                let next = try await harness.control.consume(queue: harness.topology.sendQueues[0], prefetch: 10)
                let second = try #require(try await harness.jobs(1, consumer: next).first?.job)
                await next.close()
                #expect(second.activityId == "r-7" && second.event == .start)
                #expect(second.target == .device(token: Events.startToken, kind: .pushToStart))
            }
        }
    }

    /// Two games kick off at once; one fan follows both teams, another follows both but has
    /// Live Activities turned off. The first fan's one push-to-start token starts both games;
    /// the second fan is started into neither.
    @Test(arguments: StoreKind.underTest)
    func twoGamesAtOnceReachAFollowerOfBoth(store: StoreKind) async throws {
        try await withBroker {
            try await TranslatorHarness.run(store: store) { harness, _ in
                let fan = String(repeating: "f1", count: 32), off = String(repeating: "0f", count: 32)
                for (user, token) in [("fan", fan), ("off", off)] {
                    try await harness.store.registerPushToStartToken(PushToStartToken(
                        userID: user, attributesType: "ScoreAttributes", token: token, registeredAt: Date()))
                    for topic in ["team:ars", "team:che"] { _ = try await harness.store.follow(userID: user, topic: topic, at: Date()) }
                }
                try await harness.store.setPreferences(UserPreferences(activitiesEnabled: false, frequentPushesEnabled: false), userID: "off")
                let state = ScoreAttributes.ContentState(homeScore: 0, awayScore: 0, period: "1st half", clock: "0'", status: .live)
                let games = try [("g-ars", "team:ars"), ("g-che", "team:che")].map { game, topic in
                    try LivelineEvent.score(
                        activityId: game, state: state,
                        attributes: ScoreAttributes(gameId: game, league: "League", homeTeam: .init(name: "Home", abbreviation: "HOM"),
                                                    awayTeam: .init(name: "Away", abbreviation: "AWY")),
                        topics: [topic], time: Events.base)
                }
                try await harness.publisher.publish(contentsOf: games)
                try await eventually("both games handled") {
                    let left = try await harness.control.messageCount(queue: harness.topology.translateQueues[0])
                    return left == 0 && harness.metrics.total("liveline_translator_jobs_published_total") >= 2
                }
                // One message, or two when the games came in two batches.
                let messages = try await harness.control.messageCount(queue: harness.topology.sendQueues[0])
                let consumer = try await harness.control.consume(queue: harness.topology.sendQueues[0], prefetch: 10)
                let jobs = try await harness.jobs(messages, consumer: consumer).map(\.job)
                await consumer.close()
                #expect(jobs.count == 2, "one start a game, none for the fan who turned them off: \(jobs.map(\.target))")
                #expect(Set(jobs.map(\.activityId)) == ["g-ars", "g-che"])
                #expect(jobs.allSatisfy { $0.event == .start && $0.target == .device(token: fan, kind: .pushToStart) })
            }
        }
    }

    @Test func aFailedPublishRequeuesTheBatchAndTheRedeliveryStillSendsTheJob() async throws {
        try await withBroker {
            let settings = TranslatorSettings(failureBackoff: .milliseconds(200))
            try await TranslatorHarness.run(settings: settings) { harness, _ in
                try await harness.registerUpdateToken(Events.tokenA, activity: "r-9", user: "u-9")
                let event = try Events.ride("r-9", .driverAssigned, at: 0, attributes: true)
                let expected = try Events.expectedJobs([event], tokens: TokenSnapshot(updateTokens: [Events.tokenA]))
                    .flatMap { $0 }
                // No send queue: the job is unroutable, so the batch fails after its transaction.
                try await harness.control.delete(queue: harness.topology.sendQueues[0])
                try await harness.publisher.publish(event)
                try await eventually("a failed batch") {
                    harness.metrics.total("liveline_translator_batches_failed_total") >= 1
                }
                try await harness.control.declare(harness.topology.amqp)

                let consumer = try await harness.control.consume(queue: harness.topology.sendQueues[0], prefetch: 10)
                let (job, delivery) = try #require(try await harness.jobs(1, consumer: consumer).first)
                await consumer.close()
                #expect(job.jobId == expected.first?.jobId)
                // Marked as a copy: another translator may have queued newer jobs of its lane
                // since, so the sender checks it against the store before sending it.
                #expect(delivery.properties.headers[AMQPMessage.resentHeader]?.boolValue == true)
                #expect(job.payload == expected.first?.payload)
                #expect(try await harness.control.messageCount(queue: harness.topology.deadQueue) == 0)
                // The redelivery found its own state stored and published again rather than
                // dropping itself as stale.
                let trace = try await harness.store.trace(activityID: "r-9", limit: 20)
                #expect(trace.contains { $0.detail.contains("redelivered after its state was stored") })
            }
        }
    }

    /// Small batches, several of them awaiting confirms at once: an activity's jobs still
    /// leave in event order, and its newest state is the last job. Every event carries
    /// attributes, so none is coalesced and all of them are jobs.
    @Test func jobsLeaveInEventOrderWhileBatchesOverlap() async throws {
        try await withBroker {
            let activities = (0..<4).map { "o-\($0)" }
            let perActivity = 150
            try await TranslatorHarness.run(settings: TranslatorSettings(prefetch: 80, maxBatchSize: 20, linger: .milliseconds(1))) { harness, _ in
                for activity in activities {
                    try await harness.registerUpdateToken(Events.tokenA, activity: activity, user: "u-1")
                }
                let events = try Events.interleavedRides(activities, steps: perActivity, attributes: true)
                try await harness.publisher.publish(contentsOf: events)
                try await eventually("all events handled") {
                    let left = try await harness.control.messageCount(queue: harness.topology.translateQueues[0])
                    return left == 0 && harness.metrics.total("liveline_translator_events_received_total") == Int64(events.count)
                }
                let count = try await harness.control.messageCount(queue: harness.topology.sendQueues[0])
                let consumer = try await harness.control.consume(queue: harness.topology.sendQueues[0], prefetch: 1000)
                let jobs = try await harness.jobs(count, consumer: consumer).map(\.job)
                await consumer.close()
                #expect(harness.metrics.total("liveline_translator_batches_failed_total") == 0)
                for activity in activities {
                    let sequences = jobs.filter { $0.activityId == activity }.map(\.sequence)
                    #expect(sequences.count == perActivity, "\(activity): every event is a job")
                    #expect(sequences == sequences.sorted() && Set(sequences).count == sequences.count, "\(activity): \(sequences)")
                    #expect(sequences.last == Events.newestSequence(steps: perActivity))
                }
            }
        }
    }

    /// A backlog of 50 updates for one ride, taken in batches of 5: an update is stored but
    /// not sent when a newer one is in its own batch or in the next one, already parsed.
    /// Every event is a job or a counted, traced drop, and the newest state is the last job.
    @Test func aBacklogForOneRideIsCoalescedAcrossBatches() async throws {
        try await withBroker {
            let settings = TranslatorSettings(prefetch: 50, maxBatchSize: 5, linger: .milliseconds(20))
            try await TranslatorHarness.run(settings: settings) { harness, _ in
                try await harness.registerUpdateToken(Events.tokenA, activity: "b-1", user: "u-1")
                let events = try Events.interleavedRides(["b-1"], steps: 50)
                try await harness.publisher.publish(contentsOf: events)
                func superseded() -> Int64 { harness.metrics.total("liveline_translator_events_dropped_total", [("reason", "superseded")]) }
                try await eventually("all events handled") {
                    let left = try await harness.control.messageCount(queue: harness.topology.translateQueues[0])
                    return left == 0 && harness.metrics.total("liveline_translator_events_received_total") == 50
                }
                let count = try await harness.control.messageCount(queue: harness.topology.sendQueues[0])
                let consumer = try await harness.control.consume(queue: harness.topology.sendQueues[0], prefetch: 60)
                let sequences = try await harness.jobs(count, consumer: consumer).map(\.job.sequence)
                await consumer.close()
                #expect(Int64(sequences.count) + superseded() == 50, "each event sent or dropped: \(sequences.count) jobs")
                #expect(sequences == sequences.sorted())
                #expect(sequences.last == Events.newestSequence(steps: 50), "the newest state is sent last")
                let trace = try await harness.store.trace(activityID: "b-1", limit: 100)
                #expect(trace.contains { $0.kind == .dropped && $0.detail.contains("in the next batch") })
                #expect(Int64(trace.count { $0.kind == .dropped && $0.detail.contains("superseded by") }) == superseded())
            }
        }
    }

    /// A ride's driver arrives, and the trip starts at once after, amid routine updates: the
    /// arrival (an alert, at priority 10) is never coalesced away, whether the events share a
    /// batch (50 a batch) or the next batch is parsed while this one is planned (2 a batch).
    /// The routine updates around it are, and the newest state goes last.
    @Test(arguments: [50, 2])
    func anAlertIsNeverCoalescedAway(batchSize: Int) async throws {
        try await withBroker {
            let settings = TranslatorSettings(prefetch: 50, maxBatchSize: batchSize, linger: .milliseconds(20))
            try await TranslatorHarness.run(name: "\(#function)-\(batchSize)", settings: settings) { harness, _ in
                try await harness.registerUpdateToken(Events.tokenA, activity: "a-1", user: "u-9")
                var events = try (0..<6).map { try Events.ride("a-1", .driverEnRoute, at: Double($0), id: "a-1-\($0)") }
                events.append(try Events.ride("a-1", .driverArrived, at: 6))
                events += try (7..<12).map { try Events.ride("a-1", .inProgress, at: Double($0), id: "a-1-\($0)") }
                try await harness.publisher.publish(contentsOf: events)
                try await eventually("all events handled") {
                    let left = try await harness.control.messageCount(queue: harness.topology.translateQueues[0])
                    return left == 0 && harness.metrics.total("liveline_translator_events_received_total") == 12
                }
                let count = try await harness.control.messageCount(queue: harness.topology.sendQueues[0])
                let consumer = try await harness.control.consume(queue: harness.topology.sendQueues[0], prefetch: 60)
                let jobs = try await harness.jobs(count, consumer: consumer).map(\.job)
                await consumer.close()
                let arrived = jobs.filter { $0.eventId == events[6].id }
                #expect(arrived.count == 1, "the arrival was sent once: \(jobs.map(\.eventId))")
                #expect(arrived.first?.priority == .high && arrived.first?.alerts == true)
                #expect(jobs.last?.eventId == events[11].id, "the newest state goes last")
                #expect(jobs.map(\.sequence) == jobs.map(\.sequence).sorted())
                let superseded = harness.metrics.total("liveline_translator_events_dropped_total", [("reason", "superseded")])
                #expect(Int64(jobs.count) + superseded == 12, "each event sent or dropped")
            }
        }
    }

    /// An update that wanted priority 10 and went at 5 for its budget is not superseded by the
    /// next batch: the event after it is over the hard cap and dead-lettered, so dropping it
    /// would leave the device on an older state. Batches of 4 put ring 4 before ring 5's batch.
    @Test(arguments: [50, 4, 2])
    func aDowngradedUpdateIsNotSupersededByALetterAhead(batchSize: Int) async throws {
        try await withBroker {
            let settings = TranslatorSettings(prefetch: 50, maxBatchSize: batchSize, linger: .milliseconds(20))
            try await TranslatorHarness.run(name: "\(#function)-\(batchSize)", settings: settings) { harness, _ in
                try await harness.registerUpdateToken(Events.tokenA, activity: "al-1", user: "u-9", domain: "alarm")
                let events = (1...6).map { Events.alarm("al-1", ring: $0, at: Events.base.addingTimeInterval(Double($0))) }
                try await harness.publisher.publish(contentsOf: events)
                try await eventually("all events handled") {
                    let left = try await harness.control.messageCount(queue: harness.topology.translateQueues[0])
                    return left == 0 && harness.metrics.total("liveline_translator_events_received_total") == 6
                }
                let count = try await harness.control.messageCount(queue: harness.topology.sendQueues[0])
                let consumer = try await harness.control.consume(queue: harness.topology.sendQueues[0], prefetch: 60)
                let jobs = try await harness.jobs(count, consumer: consumer).map(\.job)
                await consumer.close()
                #expect(jobs.map(\.eventId) == (1...4).map { "al-1-\($0)" }, "the newest state sent is ring 4")
                #expect(jobs.map(\.priority) == [.high, .high, .low, .low])
                try await eventually("rings 5 and 6 dead-lettered over the cap") {
                    try await harness.control.messageCount(queue: harness.topology.deadQueue) == 2
                }
            }
        }
    }

    /// A batch's jobs for one send shard go out bundled, and a batch with more jobs than a
    /// publish slice (a big audience) goes out in slices, each confirmed before the next:
    /// every job arrives once, in order, no message carries more than its limit, and the
    /// batch is acked.
    @Test func aBigAudienceGoesOutInBundlesAndSlices() async throws {
        try await withBroker {
            let settings = TranslatorSettings(maxBatchSize: 10, linger: .milliseconds(20), publishSlice: 7, jobsPerMessage: 4)
            try await TranslatorHarness.run(settings: settings) { harness, _ in
                let devices = 30
                for device in 0..<devices {
                    try await harness.registerUpdateToken(
                        String(format: "%064x", device + 1), activity: "s-1", user: "u-1", device: "d-\(device)")
                }
                let events = try Events.interleavedRides(["s-1"], steps: 2, attributes: true)
                try await harness.publisher.publish(contentsOf: events)
                try await eventually("the events acked and every job published") {
                    try await harness.control.messageCount(queue: harness.topology.translateQueues[0]) == 0
                        && harness.metrics.total("liveline_translator_events_received_total") == Int64(events.count)
                        && harness.metrics.total("liveline_translator_jobs_published_total") == Int64(devices * events.count)
                }
                // 60 jobs in slices of 7, each slice in messages of at most 4: 17 messages when
                // the two events share a batch, 18 when they come in two.
                let messages = try await harness.control.messageCount(queue: harness.topology.sendQueues[0])
                #expect((17...18).contains(messages))
                let consumer = try await harness.control.consume(queue: harness.topology.sendQueues[0], prefetch: 100)
                let received = try await harness.jobs(messages, consumer: consumer)
                await consumer.close()
                let jobs = received.map(\.job)
                #expect(jobs.count == devices * events.count)
                #expect(Set(jobs.map(\.jobId)).count == jobs.count, "each job once")
                #expect(jobs.map(\.sequence) == jobs.map(\.sequence).sorted(), "the first event's jobs before the second's")
                let bundles = Dictionary(grouping: received, by: { $0.delivery.deliveryTag }).values
                #expect(bundles.allSatisfy { $0.count <= 4 })
                #expect(bundles.contains { $0.count == 4 && $0[0].delivery.properties.headers[TranslatorHeaders.jobs]?.intValue == 4 })
                #expect(harness.metrics.total("liveline_translator_batches_failed_total") == 0)
            }
        }
    }

    /// APNs not opening a game's channel (here: no credentials for its app) fails neither
    /// the batch nor the other events: it is logged and counted, the broadcast job still goes
    /// to the sender (which opens the channel itself), and the ride beside it flows.
    @Test func aChannelAPNsWillNotOpenHoldsNothingBack() async throws {
        try await withBroker {
            try await TranslatorHarness.run(channels: APNsClientDirectory([APNsClient]())) { harness, _ in
                try await harness.registerUpdateToken(Events.tokenA, activity: "r-c", user: "u-1")
                let game = try LivelineEvent.score(
                    activityId: "g-c", state: .init(homeScore: 0, awayScore: 0, period: "1st", clock: "0'", status: .scheduled),
                    attributes: ScoreAttributes(
                        gameId: "g-c", league: "L", homeTeam: .init(name: "H", abbreviation: "HOM"),
                        awayTeam: .init(name: "A", abbreviation: "AWY")))
                try await harness.publisher.publish(contentsOf: [game, try Events.ride("r-c", user: "u-1", .driverAssigned, at: 0)])
                try await eventually("both jobs") { harness.metrics.total("liveline_translator_jobs_published_total") == 2 }
                let jobs = try await harness.takeQueuedJobs()
                #expect(Set(jobs.map(\.target)) == [.channel(key: "g-c"), .device(token: Events.tokenA, kind: .update)])
                #expect(harness.metrics.total("liveline_translator_channel_failures_total") == 1)
                #expect(harness.metrics.total("liveline_translator_batches_failed_total") == 0)
                #expect(try await harness.store.channel(domain: "score", key: "g-c") == nil)
            }
        }
    }

    @Test func gracefulShutdownAcksEverythingItProcessed() async throws {
        try await withBroker {
            let total = 600
            try await TranslatorHarness.run(settings: TranslatorSettings(prefetch: 100, maxBatchSize: 50)) { harness, _ in
                for index in 0..<total {
                    try await harness.registerUpdateToken(Events.tokenA, activity: "g-\(index)", user: "u-1")
                }
                let events = try (0..<total).map { try Events.ride("g-\($0)", user: "u-1", .driverAssigned, at: 0) }
                try await harness.publisher.publish(contentsOf: events)
                // Returning triggers the graceful shutdown, mid-stream: some jobs are out.
                try await eventually("some jobs") {
                    try await harness.control.messageCount(queue: harness.topology.sendQueues[0]) > 0
                }
            } afterShutdown: { harness in
                // The service's connections are closed, so anything received but not acked
                // is back in the translate queue. Every event is either still there or was
                // translated into exactly one job, never both and never neither.
                let left = try await harness.control.messageCount(queue: harness.topology.translateQueues[0])
                let jobs = try await harness.takeQueuedJobs().count
                #expect(jobs > 0)
                #expect(left + jobs == total)
                if ProcessInfo.processInfo.environment["LIVELINE_TEST_VERBOSE"] != nil {
                    print("graceful shutdown: \(jobs) translated, \(left) left in the queue")
                }
            }
        }
    }
}
