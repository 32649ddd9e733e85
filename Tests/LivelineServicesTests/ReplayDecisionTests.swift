import Foundation
import LivelineAMQP
import LivelineCodecs
import LivelineCore
import LivelineMessaging
import LivelineStore
import LivelineStoreTestSupport
import LivelineTestSupport
import MetricsTestKit
import Testing
@testable import LivelineServices

@Suite("Dead letters read and replay decisions")
struct ReplayDecisionTests {
    static let now = Date()
    static let token = randomDeviceToken()

    static func activity(
        started: Date = now.addingTimeInterval(-600), lastEvent: Date? = nil, ended: Date? = nil, lastPush: Int64? = nil,
        state: String? = nil
    ) -> ActivityRecord {
        ActivityRecord(
            id: "r-1", domain: "ride", attributesType: "RideAttributes", userID: "u-1", contentState: state,
            lastEventAt: lastEvent, startedAt: started, endedAt: ended, lastPushTimestamp: lastPush)
    }

    static func letter(_ job: PushJob, reason: String = "retries-exhausted") -> DeadLetterRecord {
        DeadLetterRecord(
            id: "l-1", reason: reason, source: .sender, message: "", activityID: job.activityId, payloadKind: .job,
            body: job.encoded(), routingKey: "ride.update", attempts: 1, firstFailedAt: now, lastFailedAt: now, keptAt: now)
    }

    static func decide(_ job: PushJob, _ activity: ActivityRecord?, tokens: Set<String> = [token]) -> ReplayDecision {
        ReplayDecision.decide(letter(job), activity: activity, updateTokens: tokens, now: now)
    }

    static func skipReason(_ decision: ReplayDecision) -> ReplayDecision.SkipReason? {
        if case .skip(let reason) = decision { return reason }
        return nil
    }

    @Test func eachSkipRuleForJobs() {
        let update = makeJob(target: .device(token: Self.token, kind: .update), activityID: "r-1", priority: .low)
        let applied = Date(millisecondsSince1970: update.sequence)
        #expect(Self.skipReason(Self.decide(update, nil)) == .activityUnknown)
        #expect(Self.skipReason(Self.decide(update, Self.activity(lastEvent: applied, ended: Self.now))) == .ended)
        #expect(Self.skipReason(Self.decide(update, Self.activity(started: Self.now.addingTimeInterval(-9 * 3600), lastEvent: applied))) == .pastLifetime)
        #expect(Self.skipReason(Self.decide(update, Self.activity(lastEvent: applied.addingTimeInterval(1)))) == .superseded)
        #expect(Self.skipReason(Self.decide(update, Self.activity(lastEvent: applied), tokens: [])) == .tokenRemoved)
        #expect(Self.skipReason(Self.decide(update, Self.activity(lastEvent: applied))) == nil)
        // An end is still sent after the end was applied, and up to 12 hours in.
        let end = makeJob(target: .device(token: Self.token, kind: .update), activityID: "r-1", event: .end, isTerminal: true)
        let ended = Self.activity(started: Self.now.addingTimeInterval(-10 * 3600), lastEvent: applied, ended: Self.now)
        #expect(Self.skipReason(Self.decide(end, ended)) == nil)
        let unreadable = DeadLetterRecord(
            id: "x", reason: "invalid-job", source: .sender, message: "", payloadKind: .job, body: Data("{}".utf8),
            routingKey: "replay", attempts: 1, firstFailedAt: Self.now, lastFailedAt: Self.now, keptAt: Self.now)
        #expect(Self.skipReason(ReplayDecision.decide(unreadable, activity: nil, updateTokens: [], now: Self.now)) == .unreadable)
    }

    @Test func sentJobsAreRestampedSoTheSenderAndActivityKitAcceptThem() throws {
        let stamp = Int64(Self.now.timeIntervalSince1970) - 3600
        let payload = Data(#"{"aps":{"timestamp":\#(stamp),"event":"update","content-state":{"status":"old"},"stale-date":\#(stamp + 900)}}"#.utf8)
        let job = makeJob(
            target: .device(token: Self.token, kind: .update), activityID: "r-1", expiration: stamp + 900, payload: payload,
            sequence: stamp * 1000)
        let decision = Self.decide(job, Self.activity(lastEvent: Date(millisecondsSince1970: stamp * 1000), lastPush: stamp + 5))
        guard case .sendJob(let sent, let note) = decision else { Issue.record("not sent: \(decision)"); return }
        let aps = try #require(try JSONValue.parse(sent.payload)["aps"]?.objectValue)
        #expect(aps["timestamp"] == .integer(stamp + 5), "never older than the last push")
        let fresh = try #require(sent.expiration)
        #expect(fresh > Int64(Self.now.timeIntervalSince1970), "the sender would drop an expired update")
        #expect(aps["stale-date"] == .integer(fresh))
        #expect(aps["content-state"] == .object(["status": .string("old")]))
        #expect(note.contains("stale date moved") && note.contains("timestamp raised"))
        #expect(sent.jobId == job.jobId)
    }

    @Test func aStartCarriesTheCurrentStateWhenItIsNewer() throws {
        let start = makeJob(target: .device(token: Self.token, kind: .pushToStart), activityID: "r-1", event: .start)
        let later = Date(millisecondsSince1970: start.sequence + 5000)
        let decision = Self.decide(start, Self.activity(lastEvent: later, state: #"{"status":"newest"}"#), tokens: [])
        guard case .sendJob(let sent, _) = decision else { Issue.record("not sent: \(decision)"); return }
        #expect(try JSONValue.parse(sent.payload)["aps"]?["content-state"] == .object(["status": .string("newest")]))
    }

    /// A goal dead-lettered, then overtaken by newer events: replayed, it is not coalesced
    /// away, but goes with its alert, the current state, and a timestamp newer than the last push.
    @Test func anAlertOvertakenByNewerEventsGoesWithTheCurrentState() throws {
        let stamp = Int64(Self.now.timeIntervalSince1970) - 600
        let payload = Data(#"{"aps":{"timestamp":\#(stamp),"event":"update","content-state":{"home":1},"alert":{"title":"Goal","body":"1-0"}}}"#.utf8)
        let goal = makeJob(
            target: .device(token: Self.token, kind: .update), activityID: "r-1", priority: .high, payload: payload,
            sequence: stamp * 1000, alerts: true)
        let newer = Self.activity(lastEvent: Date(millisecondsSince1970: (stamp + 60) * 1000), lastPush: stamp + 60, state: #"{"home":2}"#)
        guard case .sendJob(let sent, let note) = Self.decide(goal, newer) else { Issue.record("coalesced away"); return }
        let aps = try #require(try JSONValue.parse(sent.payload)["aps"]?.objectValue)
        #expect(aps["content-state"] == .object(["home": .integer(2)]))
        #expect(aps["alert"] != nil)
        let timestamp = try #require(aps["timestamp"].flatMap { if case .integer(let value) = $0 { value } else { nil } })
        #expect(timestamp > stamp + 60, "ActivityKit shows only a push newer than the last")
        #expect(note.contains("current state"))
        // The same update without an alert, at priority 5, is skipped as superseded.
        var silent = goal
        silent.priority = .low
        silent.alerts = false
        #expect(Self.skipReason(Self.decide(silent, newer)) == .superseded)
    }

    /// The goal replayed with a raised timestamp, then the newest update's own letter in the
    /// same replay: that one is stamped after the goal, so ActivityKit shows both in order.
    @Test func aLaterLetterOfTheSameActivityIsStampedAfterTheReplaysEarlierPush() throws {
        let stamp = Int64(Self.now.timeIntervalSince1970) - 600
        func update(_ seconds: Int64, home: Int, alert: Bool) -> PushJob {
            let alertJSON = alert ? #","alert":{"title":"Goal","body":"x"}"# : ""
            let payload = Data(#"{"aps":{"timestamp":\#(stamp + seconds),"event":"update","content-state":{"home":\#(home)}\#(alertJSON)}}"#.utf8)
            return makeJob(
                target: .device(token: Self.token, kind: .update), activityID: "r-1", priority: alert ? .high : .low,
                payload: payload, sequence: (stamp + seconds) * 1000, alerts: alert)
        }
        func timestamp(_ decision: ReplayDecision) throws -> Int64 {
            guard case .sendJob(let job, _) = decision else { throw ReplayError("not sent") }
            let aps = try #require(try JSONValue.parse(job.payload)["aps"]?.objectValue)
            return try #require(aps["timestamp"].flatMap { if case .integer(let value) = $0 { value } else { nil } })
        }
        let current = Self.activity(lastEvent: Date(millisecondsSince1970: (stamp + 60) * 1000), lastPush: stamp + 60, state: #"{"home":2}"#)
        var sent: [String: Int64] = [:]
        let goal = Self.decide(update(0, home: 1, alert: true), current).stamped(after: &sent)
        let newest = Self.decide(update(60, home: 2, alert: false), current).stamped(after: &sent)
        let goalStamp = try timestamp(goal), newestStamp = try timestamp(newest)
        #expect(goalStamp > stamp + 60)
        #expect(newestStamp == goalStamp + 1, "after the goal's replay, not at its own older second")
        guard case .sendJob(_, let note) = newest else { return }
        #expect(note.contains("after this replay's earlier push"))
        // A letter of another activity is left as it was.
        var other = update(60, home: 2, alert: false)
        other.activityId = "r-2"
        #expect(try timestamp(Self.decide(other, current).stamped(after: &sent)) == stamp + 60)
    }

    @Test func eventsGoBackToTheTranslatorOverBudgetOnesAtPriority5() {
        func event(_ reason: String) -> DeadLetterRecord {
            DeadLetterRecord(
                id: reason, reason: reason, source: .translator, message: "", payloadKind: .event, body: Data("{}".utf8),
                routingKey: "ride.status", attempts: 1, firstFailedAt: Self.now, lastFailedAt: Self.now, keptAt: Self.now)
        }
        #expect(ReplayDecision.decide(event("over-budget"), activity: nil, updateTokens: [], now: Self.now) == .republishEvent(priorityCap: .low))
        #expect(ReplayDecision.decide(event("invalid-event"), activity: nil, updateTokens: [], now: Self.now) == .republishEvent(priorityCap: nil))
    }

    @Test func lettersReadTheSameWhateverWroteThem() throws {
        let topology = LivelineTopology(prefix: "t")
        let job = makeJob(target: .device(token: Self.token, kind: .update), activityID: "r-9")
        // The sender's document.
        let letter = DeadLetter(
            reason: .apns("BadDeviceToken"), message: "rejected", originalBody: job.encoded(), attempts: 3,
            firstAttemptAt: EventTime(millisecondsSince1970: 1_000), lastAttemptAt: EventTime(millisecondsSince1970: 2_000),
            domain: "ride", activityId: "r-9", eventId: job.eventId, jobId: job.jobId)
        let sender = DeadLetterReading.record(
            body: try JSONEncoder().encode(letter),
            properties: AMQPProperties(headers: [SenderHeaders.reason: "BadDeviceToken", DeadLetterHeaders.source: "sender"], messageID: "m-1"),
            routingKey: "", topology: topology, now: Self.now)
        #expect(sender.id == "m-1")
        #expect(sender.reason == "BadDeviceToken" && sender.source == .sender && sender.payloadKind == .job)
        #expect(sender.activityID == "r-9" && sender.jobID == job.jobId && sender.attempts == 3)
        #expect(sender.body == job.encoded() && sender.routingKey == "ride.update")
        #expect(sender.firstFailedAt == Date(millisecondsSince1970: 1_000))

        // The broker's own move, with only x-death.
        let death: AMQPFieldValue = .table([
            "queue": .string(topology.sendQueues[0]), "reason": "delivery_limit", "count": .int(1),
            "exchange": .string(topology.pushExchange), "routing-keys": .array([.string("ride.update")]),
            "time": .timestamp(1_800_000_000),
        ])
        let properties = AMQPProperties(headers: ["x-death": .array([death]), "x-delivery-count": .int(10)], messageID: job.jobId)
        let broker = DeadLetterReading.record(body: job.encoded(), properties: properties, routingKey: "", topology: topology, now: Self.now)
        #expect(broker.reason == "delivery_limit" && broker.source == .broker && broker.payloadKind == .job)
        #expect(broker.activityID == "r-9" && broker.eventID == job.eventId && broker.attempts == 11)
        #expect(broker.deaths.first?.queue == topology.sendQueues[0] && broker.routingKey == "ride.update")
        #expect(broker.lastFailedAt == Date(timeIntervalSince1970: 1_800_000_000))
        #expect(broker.message.contains("delivery limit") || broker.message.contains("delivery_limit"))
        // The same message again gets the same id; the next dead-lettering a new one.
        #expect(DeadLetterReading.record(body: job.encoded(), properties: properties, routingKey: "", topology: topology, now: Self.now).id == broker.id)
        var bumped = properties
        bumped.headers["x-death"] = .array([.table(death.tableValue!.merging(["count": .int(2)]) { $1 })])
        #expect(DeadLetterReading.record(body: job.encoded(), properties: bumped, routingKey: "", topology: topology, now: Self.now).id != broker.id)

        // A bundle the broker moved whole is one letter per job, each with its own bytes and id.
        var other = makeJob(target: .device(token: String(repeating: "b", count: 64), kind: .update), activityID: "r-8")
        other.domain = "ride"
        var bundled = properties
        bundled.contentType = PushJobBundle.contentType
        bundled.messageID = "\(job.jobId)+2"
        let letters = DeadLetterReading.records(
            body: PushJobBundle.encode([job, other]) + Data("not a job\n".utf8), properties: bundled, routingKey: "",
            topology: topology, now: Self.now)
        #expect(letters.map(\.jobID) == [job.jobId, other.jobId, nil])
        #expect(letters.map(\.body) == [job.encoded(), other.encoded(), Data("not a job".utf8)])
        #expect(letters[0].id == broker.id, "the same id as the job dead-lettered alone")
        #expect(Set(letters.map(\.id)).count == 3 && letters.allSatisfy { $0.reason == "delivery_limit" })

        // Anything else is still kept, never dropped.
        let junk = DeadLetterReading.record(body: Data([0xff, 0x00]), properties: AMQPProperties(), routingKey: "", topology: topology, now: Self.now)
        #expect(junk.payloadKind == .unknown && junk.reason == "unknown" && junk.body == Data([0xff, 0x00]))
    }
}

@Suite("Retention")
struct RetentionPrunerTests {
    /// Batch after batch until nothing is left past its retention, counted per kind in the
    /// metrics; what is within it stays.
    @Test func prunesPastTheRetentionInBatchesAndKeepsTheRest() async throws {
        try await SQLiteTestDatabase.withStore { store in
            let now = Date()
            var entries = (0..<5).map {
                TraceEntry(activityID: "r-1", at: now.addingTimeInterval(-8 * 86_400 + Double($0)), kind: .apnsOutcome, detail: "old")
            }
            entries.append(TraceEntry(activityID: "r-1", at: now.addingTimeInterval(-6 * 86_400), kind: .apnsOutcome, detail: "recent"))
            try await store.appendTrace(entries)
            let metrics = TestMetrics()
            let pruner = RetentionPruner(
                store: store, settings: .init(batchSize: 2, pause: .milliseconds(1)), logger: Broker.logger, metricsFactory: metrics)
            #expect(await pruner.prune(now: now).traceLines == 5)
            #expect(try await store.traceLines(activityID: "r-1", after: 0, limit: 10).map(\.entry.detail) == ["recent"])
            #expect(metrics.total("liveline_store_pruned_total", [("kind", "trace-lines")]) == 5)
            #expect(await pruner.prune(now: now).total == 0)
        }
    }

    /// A batch is followed by a pause that keeps the prune to its share of the time, and never
    /// by less than the floor.
    @Test func pausesToKeepToItsShareOfTheTime() {
        let tenth = RetentionPruner.Settings(pause: .milliseconds(20), busyShare: 0.1)
        #expect(tenth.pause(after: .milliseconds(50)) == .milliseconds(450))
        #expect(tenth.pause(after: .milliseconds(1)) == .milliseconds(20))
        let half = RetentionPruner.Settings(pause: .milliseconds(20), busyShare: 0.5)
        #expect(half.pause(after: .milliseconds(50)) == .milliseconds(50))
        let whole = RetentionPruner.Settings(pause: .milliseconds(20), busyShare: 1)
        #expect(whole.pause(after: .seconds(1)) == .milliseconds(20))
        #expect(RetentionPruner.Settings(busyShare: 0).busyShare == 0.01)
    }
}
