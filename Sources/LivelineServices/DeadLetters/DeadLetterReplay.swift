import Foundation
import LivelineAMQP
import LivelineCore
import LivelineMessaging
import LivelineStore

// Tests: Tests/LivelineServicesTests/DeadLetterPipelineTests.swift, Tests/LivelineRuntimeTests/OnCallOutputTests.swift

/// `liveline dlq replay`: takes dead letters from the store in claimed batches, decides for
/// each (``ReplayDecision``), republishes what should go out with publisher confirms, and
/// only then marks each letter replayed or skipped.
///
/// - A replay killed midway loses nothing: a letter is marked only after the broker
///   confirmed its republish. At worst a letter is published twice, and ActivityKit drops a
///   push whose timestamp is not newer.
/// - Two replays at once never send the same letter: each claims its batch in the store,
///   and a claim lapses after ``lease`` if its replay died.
/// - `force` also takes letters resolved before this replay began, never its own.
/// - A replay takes only letters kept before it began; one that fails again on its way
///   through comes back as a new letter for the next replay, never a loop.
public struct DeadLetterReplay: Sendable {
    /// One letter's fate, for the progress lines.
    public struct Step: Sendable, Hashable, Codable {
        public var id: String
        public var reason: String
        public var activityID: String?
        /// `replayed`, `skipped`, `failed`, or `would replay` / `would skip` in a dry run.
        public var action: String
        /// The skip reason, what was re-stamped, or why the publish failed.
        public var detail: String

        enum CodingKeys: String, CodingKey {
            case id, reason, action, detail
            case activityID = "activityId"
        }
    }

    /// The totals printed at the end.
    public struct Summary: Sendable, Hashable, Codable {
        public var replayed = 0
        public var skipped: [String: Int] = [:]
        public var failed = 0
        public var dryRun = false

        public var total: Int { replayed + skipped.values.reduce(0, +) + failed }

        public init(dryRun: Bool = false) {
            self.dryRun = dryRun
        }
    }

    public var store: any ActivityStore
    /// Where republished letters go; unused in a dry run.
    public var connection: AMQPConnection?
    public var topology: LivelineTopology
    /// Letters per claim, decision and publish.
    public var batchSize = 200
    /// How long a claim keeps other replays away from a letter.
    public var lease: TimeInterval = 120
    /// Tells the producers that asked that their events' letters were replayed.
    public var outcomes: OutcomeReporter?

    public init(store: any ActivityStore, connection: AMQPConnection?, topology: LivelineTopology = LivelineTopology()) {
        self.store = store
        self.connection = connection
        self.topology = topology
    }

    /// How many letters a replay with these options would take.
    public func count(matching filter: DeadLetterFilter, force: Bool) async throws -> Int {
        try await store.deadLetterCounts(matching: Self.replayable(filter, force: force)).values.reduce(0, +)
    }

    /// The letters a replay takes: pending ones, unless forced or a state is asked for.
    static func replayable(_ filter: DeadLetterFilter, force: Bool) -> DeadLetterFilter {
        var filter = filter
        if !force, filter.state == nil { filter.state = .pending }
        return filter
    }

    /// Replays up to `limit` letters matching `filter`, calling `progress` after each batch
    /// with its steps.
    public func run(
        matching filter: DeadLetterFilter, limit: Int, force: Bool, dryRun: Bool,
        progress: @Sendable ([Step]) -> Void
    ) async throws -> Summary {
        var summary = Summary(dryRun: dryRun)
        let started = Date()
        // Only the letters there were when the run began: a republished letter that fails again
        // comes back as a new letter while the run goes on, and taking it again would loop.
        var filter = filter
        filter.keptBefore = min(filter.keptBefore ?? started, started)
        if dryRun {
            let pending = Self.replayable(filter, force: force)
            // Oldest first, as a real replay claims them, so the preview shows what it will do.
            let matching = try await store.deadLetterCounts(matching: pending).values.reduce(0, +)
            let letters = try await store.deadLetters(matching: pending, limit: matching).reversed().prefix(limit)
            for chunk in Array(letters).chunked(batchSize) {
                let decisions = try await decide(Array(chunk), now: Date())
                let steps = zip(chunk, decisions).map { letter, decision in
                    Self.step(letter, decision, action: decision.isSkip ? "would skip" : "would replay")
                }
                for (letter, decision) in zip(chunk, decisions) { summary.count(letter, decision, failed: false) }
                progress(steps)
            }
            return summary
        }

        guard let connection else { throw ReplayError("no broker connection to replay through") }
        let claimant = UUID().uuidString.lowercased()
        // Failed letters stay claimed during the run, so it does not take them again, and
        // are released at the end for the next replay.
        var unsent: [String] = []
        do {
            try await replayBatches(
                filter, limit: limit, claimant: claimant, resolvedBefore: force ? started : nil, connection: connection,
                summary: &summary, unsent: &unsent, progress: progress)
        } catch {
            try? await store.resolveDeadLetters(unsent.map { ($0, nil) }, claimant: claimant, at: Date())
            throw error
        }
        try await store.resolveDeadLetters(unsent.map { ($0, nil) }, claimant: claimant, at: Date())
        return summary
    }

    private func replayBatches(
        _ filter: DeadLetterFilter, limit: Int, claimant: String, resolvedBefore: Date?, connection: AMQPConnection,
        summary: inout Summary, unsent: inout [String], progress: @Sendable ([Step]) -> Void
    ) async throws {
        var sent: [String: Int64] = [:]
        while summary.total < limit {
            let now = Date()
            let batch = try await store.claimDeadLetters(
                matching: filter, limit: min(batchSize, limit - summary.total), claimant: claimant, at: now,
                lease: lease, resolvedBefore: resolvedBefore)
            if batch.isEmpty { break }
            let decisions = try await decide(batch, now: now).map { $0.stamped(after: &sent) }
            var messages: [AMQPMessage] = []
            var messageIndex: [Int: Int] = [:]
            for (index, (letter, decision)) in zip(batch, decisions).enumerated() {
                guard let message = message(for: letter, decision) else { continue }
                messageIndex[index] = messages.count
                messages.append(message)
            }
            var failures: [Int: String] = [:]
            do {
                try await connection.publish(contentsOf: messages)
            } catch let error as AMQPPublishError {
                for failure in error.failures { failures[failure.index] = "\(failure.error)" }
            } catch {
                for index in messages.indices { failures[index] = "\(error)" }
            }

            var outcomes: [(id: String, outcome: String?)] = []
            var reported: [AMQPMessage] = []
            var steps: [Step] = []
            var trace: [TraceEntry] = []
            for (index, (letter, decision)) in zip(batch, decisions).enumerated() {
                let failure = messageIndex[index].flatMap { failures[$0] }
                summary.count(letter, decision, failed: failure != nil)
                let step: Step
                if let failure {
                    unsent.append(letter.id)
                    step = Step(id: letter.id, reason: letter.reason, activityID: letter.activityID, action: "failed", detail: failure)
                } else {
                    outcomes.append((letter.id, decision.outcome))
                    step = Self.step(letter, decision, action: decision.isSkip ? "skipped" : "replayed")
                    if !decision.isSkip, let message = replayed(letter) { reported.append(message) }
                }
                steps.append(step)
                if let activity = letter.activityID {
                    trace.append(TraceEntry(
                        activityID: activity, at: Date(), kind: .replayed,
                        detail: "dead letter \(letter.id) (\(letter.reason)): \(step.action), \(step.detail)"))
                }
            }
            try await store.resolveDeadLetters(outcomes, claimant: claimant, at: Date())
            try await store.appendTrace(trace)
            try await self.outcomes?.publish(reported, on: connection)
            progress(steps)
        }
    }

    /// The `replayed` outcome of a letter whose event's producers asked for outcomes.
    private func replayed(_ letter: DeadLetterRecord) -> AMQPMessage? {
        guard let domain = letter.domain, let eventID = letter.eventID, let activityID = letter.activityID else { return nil }
        return outcomes?.message(
            for: domain,
            EventOutcome(
                .replayed, eventId: eventID, domain: domain, activityId: activityID, app: AppKeys.prefix(of: activityID),
                reason: letter.reason, deadLetterId: letter.id),
            key: letter.id)
    }

    /// Loads the activities and tokens the batch's job letters need, in one call, and decides.
    private func decide(_ letters: [DeadLetterRecord], now: Date) async throws -> [ReplayDecision] {
        var requests: [SnapshotRequest] = []
        for letter in letters where letter.payloadKind == .job {
            if let job = try? PushJob(json: letter.body) {
                requests.append(SnapshotRequest(activityID: job.activityId, userID: job.userId, attributesType: job.attributesType))
            }
        }
        let snapshots = try await store.loadSnapshots(requests)
        return letters.map { letter in
            let snapshot = letter.activityID.flatMap { snapshots[$0] }
            return ReplayDecision.decide(
                letter, activity: snapshot?.activity, updateTokens: Set(snapshot?.updateTokens.map(\.token) ?? []), now: now)
        }
    }

    private func message(for letter: DeadLetterRecord, _ decision: ReplayDecision) -> AMQPMessage? {
        switch decision {
        case .skip:
            return nil
        case .republishEvent(let cap):
            var headers: AMQPTable = [DeadLetterHeaders.replayOf: .string(letter.id)]
            if let cap { headers[TranslatorHeaders.priorityCap] = .int(Int64(cap.rawValue)) }
            // The activity as its producer named it, which the translate stage's shard is chosen by.
            if let activity = letter.activityID { headers[LivelineTopology.activityHeader] = .string(AppKeys.id(of: activity)) }
            return AMQPMessage(
                exchange: topology.eventsExchange, routingKey: letter.routingKey, body: letter.body,
                properties: AMQPProperties(
                    contentType: "application/cloudevents+json", headers: headers, persistent: true,
                    messageID: letter.eventID),
                mandatory: true)
        case .sendJob(let job, _):
            var message = OutgoingMessage.job(job, topology: topology, publishedAt: EventTime(Date()))
            message.properties.headers[DeadLetterHeaders.replayOf] = .string(letter.id)
            return message
        }
    }

    private static func step(_ letter: DeadLetterRecord, _ decision: ReplayDecision, action: String) -> Step {
        let detail: String
        switch decision {
        case .skip(let reason): detail = reason.rawValue
        case .republishEvent(let cap): detail = "event republished" + (cap.map { " at priority \($0.rawValue)" } ?? "")
        case .sendJob(let job, let note): detail = "\(job.event.rawValue) to \(job.target.logDescription), \(note)"
        }
        return Step(id: letter.id, reason: letter.reason, activityID: letter.activityID, action: action, detail: detail)
    }
}

/// A replay could not run at all (a dead letter that fails is counted, not thrown).
public struct ReplayError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

extension ReplayDecision {
    var isSkip: Bool {
        if case .skip = self { return true }
        return false
    }

    /// What the store records: `replayed` or `skipped: <reason>`.
    var outcome: String {
        if case .skip(let reason) = self { return "skipped: \(reason.rawValue)" }
        return "replayed"
    }
}

extension DeadLetterReplay.Summary {
    mutating func count(_ letter: DeadLetterRecord, _ decision: ReplayDecision, failed: Bool) {
        if failed {
            self.failed += 1
        } else if case .skip(let reason) = decision {
            skipped[reason.rawValue, default: 0] += 1
        } else {
            replayed += 1
        }
    }
}

extension Array {
    func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: Swift.max(1, size)).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
