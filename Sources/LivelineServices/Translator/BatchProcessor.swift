import Foundation
import LivelineAMQP
import LivelineCore
import LivelineLogging
import LivelineMessaging
import LivelineStore
import Logging

// Tests: Tests/LivelineServicesTests/TranslatorServiceTests.swift, Tests/LivelineServicesTests/TranslatorStoreFailureTests.swift, Tests/LivelineServicesTests/UnappliedChangeTests.swift

/// Does the work of one batch up to (not including) the ack, in steps:
/// ``parse(_:)`` reads and coalesces the messages (pure CPU); ``plan(_:after:)`` loads
/// and translates; ``store(_:)`` stores the state and trace, spends budget and marks
/// push-to-start tokens; ``submit(_:)`` queues the jobs and dead letters for publishing
/// and ``confirm(_:receipt:)`` waits for the broker's confirms. The service runs the
/// steps of consecutive batches at the same time.
///
/// `plan`, `store` and `confirm` throw when the store or a publish fails; the service
/// then requeues the batch.
/// Everything it publishes is idempotent by `message_id`, so a requeued batch that
/// publishes again is harmless.
struct BatchProcessor: Sendable {
    let translator: Translator
    let store: any ActivityStore
    let publisher: AMQPConnection
    let topology: LivelineTopology
    let settings: TranslatorSettings
    let metrics: TranslatorMetrics
    let logger: Logger
    /// Opens shared activities' channels; nil leaves that to the sender's first broadcast.
    var channels: ChannelOpener? = nil
    /// Reports drops and dead letters to the producers that asked; nil reports none.
    var outcomes: OutcomeReporter? = nil
    /// Told of each page of an audience published: a start for a million followers is one
    /// batch that takes a minute, and must not look stuck.
    var health: WorkLoopHealth? = nil

    /// A batch whose state is stored and whose messages are ready to publish.
    struct PreparedBatch: Sendable {
        /// The dead letters; the jobs are encoded as they are submitted.
        var outgoing: [AMQPMessage]
        var jobsToPublish: [PushJob]
        var publishedAt: EventTime
        var received: Int
        var translated: Int
        var jobs: Int
        var downgraded: Int
        var dropped: [String: Int]
        var deadLettered: [String: Int]
        var startedPublishing: ContinuousClock.Instant
        /// What the jobs carry, for the metrics.
        var counts = JobCounts()
        /// Outcomes for the producers, published beside the batch and confirmed with it.
        var outcomes: [AMQPMessage] = []
        /// Ids of the jobs made from redelivered events: an earlier attempt may have
        /// published them, and another translator newer jobs of their lanes since.
        var copies: Set<String> = []
        /// Shared starts whose audience goes on past the page read with the batch: the
        /// rest is read and published after the batch's own jobs, a page at a time.
        var audienceRests: [AudienceRest] = []
    }

    /// One message of a batch: its bytes, and whether the broker delivered it before.
    struct Incoming: Sendable {
        var body: Data
        var redelivered: Bool
        /// From ``TranslatorHeaders/priorityCap`` (a replayed `over-budget` letter).
        var priorityCap: PushPriority? = nil
    }

    /// A translated batch, not yet stored.
    struct PlannedBatch: Sendable {
        var plan: BatchPlan
        var received: Int
        /// Dead letters for the messages that did not parse.
        var outgoing: [AMQPMessage]
        var dropped: [String: Int]
        var deadLettered: [String: Int]
        /// Decisions made before translation (bad messages, coalescing).
        var trace: [TraceEntry]
        var now: Date
        /// The outcomes of those decisions.
        var outcomes: [AMQPMessage]
    }

    /// A batch's messages with what parsing made of each, in order, and the events left
    /// once coalesced.
    struct ParsedBatch: Sendable {
        var messages: [Incoming]
        var results: [Result<DomainEvent, EventError>]
        var coalesced: CoalescedBatch
    }

    /// Parses the bodies, in order, split over ``TranslatorSettings/parseConcurrency`` tasks
    /// (parsing is the largest part of a batch's CPU time and each message is independent),
    /// then coalesces: a newer full state in the same batch replaces an older update.
    func parse(_ messages: [Incoming]) async -> ParsedBatch {
        let results = await parseAll(messages)
        let taken = EventTime(Date()).millisecondsSince1970
        for case .success(let event) in results {
            metrics.queueWait.recordNanoseconds(max(0, taken - event.time.millisecondsSince1970) * 1_000_000)
        }
        let started = ContinuousClock.now
        let coalesced = translator.coalesce(results.compactMap { try? $0.get() })
        _ = metrics.record(.coalesce, since: started)
        return ParsedBatch(messages: messages, results: results, coalesced: coalesced)
    }

    private func parseAll(_ messages: [Incoming]) async -> [Result<DomainEvent, EventError>] {
        let started = ContinuousClock.now
        let parse: @Sendable (Incoming) -> Result<DomainEvent, EventError> = { [translator] message in
            do throws(EventError) {
                var event = try translator.parse(message.body)
                if let cap = message.priorityCap { event.priorityCap = cap }
                return .success(event)
            } catch {
                return .failure(error)
            }
        }
        defer { _ = metrics.record(.parse, since: started) }
        let chunkCount = min(settings.parseConcurrency, messages.count / 64)
        guard chunkCount > 1 else { return messages.map(parse) }
        let chunkSize = (messages.count + chunkCount - 1) / chunkCount
        return await withTaskGroup(of: (Int, [Result<DomainEvent, EventError>]).self) { group in
            for (index, start) in stride(from: 0, to: messages.count, by: chunkSize).enumerated() {
                let chunk = Array(messages[start..<min(start + chunkSize, messages.count)])
                group.addTask { (index, chunk.map(parse)) }
            }
            var chunks: [[Result<DomainEvent, EventError>]] = Array(repeating: [], count: chunkCount)
            for await (index, results) in group where index < chunks.count { chunks[index] = results }
            return chunks.flatMap { $0 }
        }
    }

    /// Loads the batch's activities and translates its events.
    ///
    /// - Parameters:
    ///   - previous: the decisions of the batch before, when its transaction may still be
    ///     running: its state is then not in the store yet, or not visible.
    ///   - whileStoring: whether the batch before may be stored while this one loads.
    func plan(_ batch: ParsedBatch, after previous: BatchPlan.CarryOver?, whileStoring: Bool) async throws -> PlannedBatch {
        let messages = batch.messages
        let now = Date()
        let nowTime = EventTime(now)
        let encoder = JSONEncoder()
        var phaseStart = ContinuousClock.now
        var outgoing: [AMQPMessage] = []
        var dropped: [String: Int] = [:]
        var deadLettered: [String: Int] = [:]
        var trace: [TraceEntry] = []
        var outcomeMessages: [AMQPMessage] = []

        // 1. Parsed. A bad message becomes a dead letter, never a crash or a silent drop.
        var incomingByEventId: [String: Incoming] = [:]
        for (message, result) in zip(messages, batch.results) {
            let body = message.body
            switch result {
            case .success(let event):
                if incomingByEventId[event.id] == nil { incomingByEventId[event.id] = message }
            case .failure(let error):
                let letter = RejectedEvent.deadLetter(body: body, error: error, at: nowTime, translator: translator)
                let message = try OutgoingMessage.deadLetter(letter, encoder: encoder, topology: topology)
                outgoing.append(message)
                deadLettered[letter.reason.rawValue, default: 0] += 1
                if let domain = letter.domain, let activity = letter.activityId, let eventID = letter.eventId {
                    report(.deadLettered, eventID: eventID, domain: domain, activityID: activity, reason: letter.reason.rawValue,
                           deadLetterID: message.properties.messageID, into: &outcomeMessages)
                }
                if let activity = letter.activityId {
                    trace.append(TraceEntry(activityID: activity, at: now, kind: .deadLettered,
                                            detail: "event \(letter.eventId ?? "?"): \(letter.message)"))
                }
            }
        }

        // 2. One load for the events kept by coalescing (while parsing; the newest of each
        //    activity is among them, so every activity of the batch is loaded).
        let coalesced = batch.coalesced
        let requests = BatchPlan.requests(for: coalesced.kept, translator: translator)
        var stored: [String: StoredActivity] = [:]
        if !requests.isEmpty { stored = try await store.loadSnapshots(requests, whileWriting: whileStoring) }
        let shared = try await sharedTargets(for: coalesced.kept, stored: stored)
        phaseStart = metrics.record(.load, since: phaseStart)

        // 3. Translate in order. A coalesced event is dropped as superseded unless a person
        //    would notice it after what came before it: that one is translated after all.
        var plan = BatchPlan(translator: translator, stored: stored, now: now, after: previous, shared: shared)
        var supersededBy: [String: String] = [:]
        for superseded in coalesced.superseded { supersededBy[superseded.event.id] = superseded.supersededBy }
        for result in batch.results {
            guard case .success(let event) = result else { continue }
            if let newer = supersededBy[event.id], !plan.isNoticeable(event) {
                dropped["superseded", default: 0] += 1
                trace.append(TraceEntry(activityID: event.activityId, at: now, kind: .dropped,
                                        detail: "event \(event.id): superseded by \(newer) in the same batch"))
                report(.dropped, event, reason: "superseded", into: &outcomeMessages)
                continue
            }
            let incoming = incomingByEventId[event.id]
            plan.translate(event, body: incoming?.body ?? Data(), redelivered: incoming?.redelivered ?? false)
        }
        _ = metrics.record(.translate, since: phaseStart)
        return PlannedBatch(
            plan: plan, received: messages.count, outgoing: outgoing, dropped: dropped, deadLettered: deadLettered,
            trace: trace, now: now, outcomes: outcomeMessages)
    }

    /// What the batch's shared activities need beyond their snapshots: the channel of each
    /// live one on a channel domain (opened now if it has none, so it exists before any push),
    /// with the content-state version it carries, and for a start that names topics, the
    /// devices of the followers.
    ///
    /// A channel APNs would not open does not fail the batch (the other domains' events must
    /// not wait on APNs): the error is logged and counted, the activity's broadcasts wait for
    /// the sender to open the channel, a start goes without it (each device then reports its
    /// own update token), and the next event of the activity tries again.
    private func sharedTargets(for events: [DomainEvent], stored: [String: StoredActivity]) async throws -> BatchPlan.SharedTargets {
        var targets = BatchPlan.SharedTargets()
        var tried: Set<String> = []
        var oldest: [String: Int?] = [:]
        for event in events {
            guard translator.isShared(domain: event.domain), let domain = translator.domain(named: event.domain) else { continue }
            let activity = stored[event.activityId]?.activity
            guard activity?.endedAt == nil else { continue }
            if domain.delivery == .channel, let channels, tried.insert(event.activityId).inserted {
                do {
                    let channel = try await channels.channel(domain: domain, key: event.activityId)
                    targets.channels[event.activityId] = channel.id
                    targets.channelEnvironments[event.activityId] = channel.environment
                } catch {
                    metrics.channelFailures.increment()
                    logger.error("could not open the activity's broadcast channel; its pushes go on without it for now", metadata: ServiceLogKey.metadata([
                        .translatorActivity: "\(event.activityId)", .translatorError: "\(error)",
                    ]))
                }
            }
            if domain.delivery == .channel, domain.channel.olderContentStates == .oldest {
                // Once per type and batch: the oldest version registered moves slowly.
                if oldest[domain.attributesType] == nil {
                    oldest[domain.attributesType] = .some(try await store.oldestContentVersion(attributesType: domain.attributesType))
                }
                if let version = oldest[domain.attributesType] ?? nil { targets.channelVersions[event.activityId] = version }
            }
            // Not sent yet, or sent by this very event: a redelivery may publish it again.
            if let topics = event.topics, activity?.pushToStartSentAt == nil || activity?.pushToStartSentAt.map(EventTime.init) == event.time,
                targets.audiences[event.activityId] == nil
            {
                targets.audienceReadAt[event.activityId] = Date()
                let page = try await store.audience(
                    topics: topics, attributesType: domain.attributesType, of: event.activityId, after: nil, limit: settings.audiencePage)
                targets.audiences[event.activityId] = page
                if page.count == settings.audiencePage, let last = page.last {
                    targets.audienceRest[event.activityId] = AudiencePosition(after: last)
                }
            }
        }
        return targets
    }

    /// Stores a planned batch and turns its decisions into the messages to publish.
    ///
    /// - Parameter next: the next batch, when it is already parsed: an update that one of
    ///   its events supersedes is stored (its state is the newest until then) but not sent.
    func store(_ planned: PlannedBatch, next: ParsedBatch? = nil) async throws -> PreparedBatch {
        let plan = planned.plan
        let now = planned.now
        let encoder = JSONEncoder()
        var outgoing = planned.outgoing
        var dropped = planned.dropped
        var deadLettered = planned.deadLettered
        var trace = planned.trace
        var outcomeMessages = planned.outcomes
        var phaseStart = ContinuousClock.now

        // 4. One transaction: every applied state, every decision's trace, and the priority-10
        //    budget of the sends whose state applies (the store's counter is the one shared
        //    across workers).
        // The entries are read in place, by index: `for entry in` copied each one (its event,
        // body and decision, a dozen retains) in every loop over them.
        var supersededAhead = next.map { translator.supersededAhead(plan.entries.map(\.event), by: $0.coalesced.kept) } ?? [:]
        for index in plan.entries.indices {
            guard case .send(let send) = plan.entries[index].decision, let newer = supersededAhead[plan.entries[index].event.id]
            else { continue }
            let event = plan.entries[index].event
            // A push a person would notice goes out whatever follows it, and so does one that
            // wanted priority 10 and went at 5 for its budget: the next batch's event may be
            // over the hard cap and dead-lettered, which would leave the device on an older state.
            if send.jobs.contains(where: \.isNoticeable) || send.newBudget != plan.entries[index].budgetBefore {
                supersededAhead[event.id] = nil
                continue
            }
            trace.append(TraceEntry(activityID: event.activityId, at: now, kind: .dropped,
                                    detail: "event \(event.id): superseded by \(newer) in the next batch; stored, not sent"))
        }
        let spending = budgetDemands(plan.entries, supersededAhead: supersededAhead, now: now)
        let (outcomes, spent) = try await store.applyChanges(plan.changes, trace: trace + plan.trace, spending: spending.demands)
        checkBudget(spent, expected: spending.expected)
        phaseStart = metrics.record(.apply, since: phaseStart)

        // 5. Keep the sends whose state the store applied (another worker may have
        //    stored a newer event or an end meanwhile).
        var sends: [TranslationDecision.Send] = []
        var copies = Set<String>()
        var audienceRests: [AudienceRest] = []
        var unapplied: [TraceEntry] = []
        for entryIndex in plan.entries.indices {
            switch plan.entries[entryIndex].decision {
            case .send(let send):
                let outcome = plan.entries[entryIndex].changeIndex.flatMap { $0 < outcomes.count ? outcomes[$0] : nil }
                let notApplied = outcome.flatMap { outcome in
                    outcome == .applied ? nil : Unapplied(outcome, redelivered: plan.entries[entryIndex].redelivered)
                }
                if let notApplied {
                    unapplied.append(notApplied.trace(of: plan.entries[entryIndex].event, at: now))
                }
                if let notApplied, !notApplied.publishesAgain {
                    dropped[notApplied.metricReason, default: 0] += 1
                    report(.dropped, plan.entries[entryIndex].event, reason: notApplied.metricReason, into: &outcomeMessages)
                } else if supersededAhead[plan.entries[entryIndex].event.id] != nil {
                    dropped["superseded", default: 0] += 1
                    report(.dropped, plan.entries[entryIndex].event, reason: "superseded", into: &outcomeMessages)
                } else {
                    if plan.entries[entryIndex].redelivered { copies.formUnion(send.jobs.lazy.map(\.jobId)) }
                    if let rest = plan.entries[entryIndex].audienceRest { audienceRests.append(rest) }
                    sends.append(send)
                }
            case .drop(let drop):
                dropped[drop.reason.rawValue, default: 0] += 1
                report(.dropped, plan.entries[entryIndex].event, reason: drop.reason.rawValue, into: &outcomeMessages)
            case .deadLetter(let rejection):
                // Rare: the copy of the entry is taken only here.
                let entry = plan.entries[entryIndex]
                let letter = DeadLetter(
                    reason: rejection.reason, message: rejection.message, originalBody: entry.body,
                    firstAttemptAt: EventTime(now), domain: entry.event.domain, activityId: entry.event.activityId,
                    eventId: entry.event.id)
                let message = try OutgoingMessage.deadLetter(letter, encoder: encoder, topology: topology)
                outgoing.append(message)
                deadLettered[rejection.reason.rawValue, default: 0] += 1
                report(.deadLettered, entry.event, reason: rejection.reason.rawValue, deadLetterID: message.properties.messageID,
                       into: &outcomeMessages)
            }
        }

        // Rare (workers racing on an activity across a broker outage): a write of its own, so
        // on-call's trace says why the push was or was not sent.
        if !unapplied.isEmpty { try await store.appendTrace(unapplied) }

        let jobs = sends.flatMap(\.jobs)
        return PreparedBatch(
            outgoing: outgoing, jobsToPublish: jobs, publishedAt: EventTime(Date()),
            received: planned.received, translated: sends.count, jobs: jobs.count,
            downgraded: sends.count { $0.downgraded },
            dropped: dropped, deadLettered: deadLettered, startedPublishing: phaseStart,
            counts: JobCounts(sends),
            outcomes: outcomeMessages, copies: copies, audienceRests: audienceRests)
    }

    /// Adds the event's outcome when its domain's producers asked for outcomes.
    private func report(
        _ kind: EventOutcome.Kind, _ event: DomainEvent, reason: String, deadLetterID: String? = nil, into messages: inout [AMQPMessage]
    ) {
        report(kind, eventID: event.id, domain: event.domain, activityID: event.activityId, reason: reason,
               deadLetterID: deadLetterID, into: &messages)
    }

    private func report(
        _ kind: EventOutcome.Kind, eventID: String, domain: String, activityID: String, reason: String, deadLetterID: String?,
        into messages: inout [AMQPMessage]
    ) {
        if let message = outcomes?.message(
            for: domain,
            EventOutcome(
                kind, eventId: eventID, domain: domain, activityId: activityID, app: translator.configuration.keys.app(of: activityID),
                reason: reason, deadLetterId: deadLetterID),
            key: eventID)
        {
            messages.append(message)
        }
    }

    /// A send whose change the store did not apply as planned: it held a newer event or an
    /// end by then (stored meanwhile by another worker), or this very event.
    struct Unapplied {
        let outcome: ChangeOutcome
        let redelivered: Bool

        init(_ outcome: ChangeOutcome, redelivered: Bool) {
            self.outcome = outcome
            self.redelivered = redelivered
        }

        /// This very event, redelivered: stored by an earlier attempt that may have died
        /// before publishing (its translator cut off from the broker), so the push goes out
        /// again. A first delivery of it is a second copy of one publish (routed to two
        /// shards while a reshard bound both layouts), which the other copy's translator sends.
        var publishesAgain: Bool { outcome == .alreadyApplied && redelivered }

        var metricReason: String {
            switch outcome {
            case .ended: "ended-in-store"
            case .alreadyApplied: "duplicate-in-store"
            case .stale, .applied: "stale-in-store"
            }
        }

        /// The line on-call reads; a drop names the rule that holds, as the translator's own
        /// drops do.
        func trace(of event: DomainEvent, at now: Date) -> TraceEntry {
            let head = "event \(event.id) at \(RFC3339.format(event.time)) (\(event.status)): "
            let (kind, detail): (TraceEntry.Kind, String) = switch outcome {
            case .alreadyApplied where redelivered:
                (.pushDecided, "stored by an earlier attempt; jobs published again")
            case .alreadyApplied:
                (.dropped, "\(DropReason.duplicate.rawValue): not sent, another copy of this event was stored meanwhile")
            case .ended:
                (.dropped, "\(DropReason.afterEnd.rawValue): not sent, the activity ended in the store meanwhile")
            case .stale, .applied:
                (.dropped, "\(DropReason.stale.rawValue): not sent, the store holds a newer event stored meanwhile")
            }
            return TraceEntry(activityID: event.activityId, at: now, kind: kind, detail: head + detail)
        }
    }

    /// What was submitted and not yet confirmed: the batch's last slice.
    struct Submitted: Sendable {
        var messages: [AMQPMessage]
        var receipt: PublishReceipt
        /// The batch's outcomes: a full queue's refusal drops them, it does not fail the batch.
        var outcomes: (count: Int, receipt: PublishReceipt)? = nil
        /// Starts published from the rest of audiences, beyond the batch's own jobs.
        var audienceStarts = 0
        /// What those starts carry.
        var audienceCounts = JobCounts()
        /// A line per audience read to its end, written once its last slice is confirmed.
        var audienceTrace: [TraceEntry] = []
    }

    /// Queues the batch's dead letters and jobs on the publisher connection: batches
    /// submitted one after another reach the broker in that order, while several of them
    /// wait for their confirms at once.
    ///
    /// The jobs of the whole batch that go to one send shard go out together, up to
    /// ``TranslatorSettings/jobsPerMessage`` in a message (``PushJobBundle``), in batch order:
    /// at a steady flow that is a few messages per batch instead of one per event, and the
    /// broker's cost is per message. A batch of more than
    /// ``TranslatorSettings/publishSlice`` jobs (a game's start for its whole audience) goes
    /// out in slices, at most two unconfirmed at once: holding 100,000 encoded jobs until the
    /// broker confirmed them all took the translator past 500 MiB. Every slice but the last
    /// is confirmed here, before the next batch may submit, so batch order holds.
    func submit(_ batch: PreparedBatch) async throws -> Submitted {
        var messages = batch.outgoing
        var jobs = batch.jobsToPublish[...]
        var rests = batch.audienceRests[...]
        var audienceStarts = 0
        var audienceCounts = JobCounts()
        var audienceTrace: [TraceEntry] = []
        // Whether `jobs` are a page of a redelivered start's audience: copies, all of them.
        var pageOfCopies = false
        // Two slices in flight: the broker works on one while the next is encoded and sent.
        var previous: Submitted?
        while true {
            let slice = jobs.prefix(settings.publishSlice)
            jobs = jobs.dropFirst(slice.count)
            for shard in Self.byShard(slice, topology: topology) {
                var start = shard.startIndex
                while start < shard.endIndex {
                    let stop = min(shard.endIndex, start + settings.jobsPerMessage)
                    var message = OutgoingMessage.jobs(shard[start..<stop], topology: topology, publishedAt: batch.publishedAt)
                    // The sender checks a copy against the store before sending it.
                    if pageOfCopies
                        || !batch.copies.isEmpty && shard[start..<stop].contains(where: { batch.copies.contains($0.jobId) })
                    {
                        message.properties.headers[AMQPMessage.resentHeader] = .bool(true)
                    }
                    messages.append(message)
                    start = stop
                }
            }
            // Then the rest of each start's audience, a page at a time.
            while jobs.isEmpty, var rest = rests.first {
                if let page = try await nextAudiencePage(&rest) {
                    jobs = page[...]
                    pageOfCopies = rest.copy
                    audienceStarts += page.count
                    audienceCounts.add(rest.pageCounts)
                    rests[rests.startIndex] = rest
                    health?.progressed()
                } else {
                    rests.removeFirst()
                    audienceTrace.append(TraceEntry(
                        activityID: rest.event.activityId, at: Date(), kind: .pushDecided,
                        detail: "event \(rest.event.id): start for \(rest.started) more device(s) of its audience, read in \(rest.pages) page(s)"))
                }
            }
            var submitted = Submitted(messages: messages, receipt: publisher.submit(contentsOf: messages))
            if let previous { try await confirmed(previous.messages, receipt: previous.receipt) }
            if jobs.isEmpty {
                if !batch.outcomes.isEmpty {
                    submitted.outcomes = (batch.outcomes.count, publisher.submit(contentsOf: batch.outcomes))
                }
                submitted.audienceStarts = audienceStarts
                submitted.audienceTrace = audienceTrace
                submitted.audienceCounts = audienceCounts
                return submitted
            }
            previous = submitted
            messages = []
        }
    }

    /// The jobs of each send shard, each in the order given; shards in index order.
    static func byShard(_ jobs: ArraySlice<PushJob>, topology: LivelineTopology) -> [[PushJob]] {
        guard topology.send.shards > 1 else { return jobs.isEmpty ? [] : [Array(jobs)] }
        var shards = [[PushJob]](repeating: [], count: topology.send.shards)
        for job in jobs { shards[topology.sendShard(lane: job.target.laneKey(activity: job.activityId))].append(job) }
        return shards.filter { !$0.isEmpty }
    }

    /// Waits for the confirms of a submitted batch, publishing refused messages again while
    /// that is worth it; then counts the batch.
    func confirm(_ batch: PreparedBatch, submitted: Submitted) async throws {
        try await confirmed(submitted.messages, receipt: submitted.receipt)
        if let outcomes, let submittedOutcomes = submitted.outcomes {
            try await outcomes.confirmed(submittedOutcomes.count, submittedOutcomes.receipt)
        }
        if !submitted.audienceTrace.isEmpty { try await store.appendTrace(submitted.audienceTrace) }
        _ = metrics.record(.publish, since: batch.startedPublishing)
        metrics.received.increment(by: batch.received)
        metrics.translated.increment(by: batch.translated)
        metrics.jobsPublished.increment(by: batch.jobs + submitted.audienceStarts)
        metrics.downgraded.increment(by: batch.downgraded)
        metrics.record(batch.counts)
        metrics.record(submitted.audienceCounts)
        for (reason, count) in batch.dropped { metrics.dropped(reason, count: count) }
        for (reason, count) in batch.deadLettered { metrics.deadLettered(reason, count: count) }
    }

    /// The priority-10 demands of the batch's sends: each is spent in the store if its change
    /// applies. The plan used the budget loaded at the start of the batch.
    private func budgetDemands(
        _ entries: [BatchPlan.Entry], supersededAhead: [String: String], now: Date
    ) -> (demands: BudgetDemands, expected: [String: Int]) {
        var demands: [BudgetDemands.Demand] = []
        var expected: [String: Int] = [:]
        for index in entries.indices {
            guard case .send(let send) = entries[index].decision, supersededAhead[entries[index].event.id] == nil,
                send.newBudget != entries[index].budgetBefore
            else { continue }
            let activity = entries[index].event.activityId
            demands.append(.init(activityID: activity, changeIndex: entries[index].changeIndex))
            expected[activity] = send.newBudget.priority10Count
        }
        return (BudgetDemands(demands, at: now, window: settings.budgetWindowSeconds), expected)
    }

    /// A higher count from the store than the plan expected means another worker spent on
    /// the same activity meanwhile, which is counted and logged rather than re-decided (the
    /// push is already within a few of the limit).
    private func checkBudget(_ spent: [String: Int], expected: [String: Int]) {
        for (activity, count) in spent where count > (expected[activity] ?? count) {
            metrics.budgetContended.increment()
            logger.debug("priority-10 budget spent concurrently", metadata: ServiceLogKey.metadata([
                .translatorActivity: "\(activity)", .translatorBudgetStored: "\(count)",
                .translatorBudgetPlanned: "\(expected[activity] ?? 0)",
            ]))
        }
    }

    /// Waits for every confirm of a submitted run, submitting again only the messages that
    /// failed for a retriable reason (e.g. a full queue's `basic.nack`). Such a message
    /// goes out after the next batch's jobs, as a whole batch requeued after a failed
    /// publish already does; it still carries its own `aps.timestamp`.
    private func confirmed(_ messages: [AMQPMessage], receipt: PublishReceipt) async throws {
        var pending = messages
        var receipt = receipt
        var attempt = 1
        while true {
            do {
                try await receipt.confirmed()
                return
            } catch let error as AMQPPublishError {
                let retriable = error.failures.allSatisfy { $0.error.isRetriable }
                guard retriable, attempt < settings.publishAttempts else { throw error }
                pending = error.failures.compactMap { $0.index < pending.count ? pending[$0.index] : nil }
                attempt += 1
                try await Task.sleep(for: settings.publishRetryDelay)
                receipt = publisher.submit(contentsOf: pending)
            }
        }
    }
}
