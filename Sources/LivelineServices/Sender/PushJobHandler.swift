import Foundation
import LivelineAMQP
import LivelineAPNs
import LivelineCodecs
import LivelineCore
import LivelineLogging
import LivelineMessaging
import LivelineStore
import Logging

// Tests: Tests/LivelineServicesTests/SenderDeliveryTests.swift, Tests/LivelineServicesTests/SenderRetryTests.swift, Tests/LivelineServicesTests/SenderDecisionTests.swift

/// Takes one job of the send queue to its end: decode, check, send, record the outcome
/// (retry or dead letter confirmed, token deleted, trace committed), then settle its
/// delivery. The settlement follows the trace's group commit; the handler does not wait for it.
///
/// When the outcome cannot be recorded (broker or store unavailable), the delivery is
/// requeued rather than acked, so the job is never lost; the queue's delivery limit moves
/// it to the DLQ if that keeps happening.
struct PushJobHandler: Sendable {
    let clients: APNsClientDirectory
    let store: any SenderStore
    let publisher: OutcomePublisher
    let traces: TraceWriter
    let backoff: TokenBackoff
    let channels: ChannelKeeper
    let metrics: SenderMetrics
    let tiers: [LivelineTopology.RetryTier]
    let logger: Logger
    /// Reports what became of the jobs to the producers that asked; nil reports none.
    var outcomes: OutcomeReporter? = nil

    /// What a job's end leaves to commit before its ack: its trace lines, and its outcome
    /// for the producer. An array, not an optional: a message inline would grow every async
    /// frame that holds one, on every push, for an outcome most domains never ask for.
    struct Recorded: Sendable {
        var trace: [TraceEntry]
        var outcomes: [AMQPMessage] = []
    }

    /// What the delivery says about earlier attempts.
    struct Attempt {
        /// Attempts before this one.
        var count: Int
        var firstAt: EventTime
        var now: EventTime
        /// The broker's `x-death` history of the delivery (retry tiers it went through).
        var deaths: AMQPFieldValue? = nil
        /// A copy that may come after newer jobs of its lane: published again by a translator
        /// (its connection was lost before the broker confirmed it, or it translated a
        /// redelivered event), or redelivered by the broker after a sender that held it died or
        /// lost its connection. Meanwhile newer jobs for the same targets may have been queued,
        /// and sent by another worker, before this copy.
        var copy = false

        /// Back from a retry tier (retried, or deferred unsent while its device backed off: a
        /// deferral keeps the count, so only the tier's history tells), or a copy: either may
        /// have been overtaken by newer jobs.
        var returning: Bool { count > 0 || deaths != nil || copy }

        init(count: Int, firstAt: EventTime, now: EventTime, deaths: AMQPFieldValue? = nil, copy: Bool = false) {
            self.count = count
            self.firstAt = firstAt
            self.now = now
            self.deaths = deaths
            self.copy = copy
        }

        /// What `incoming`'s headers and delivery say.
        init(_ incoming: IncomingJob, now: EventTime) {
            let headers = incoming.headers
            self.init(
                count: headers[SenderHeaders.attempt]?.intValue.map { Int(clamping: $0) } ?? 0,
                firstAt: headers[SenderHeaders.firstAttemptAt]?.intValue.map { EventTime(millisecondsSince1970: $0) } ?? now,
                now: now,
                deaths: headers[DeadLetterHeaders.deaths],
                copy: incoming.redelivered || headers[AMQPMessage.resentHeader]?.boolValue == true)
        }
    }

    /// Takes the job to its end, then settles it. `job` is `incoming`'s body decoded (or
    /// why it is not a job); `overtaken` says a job that supersedes it (a newer update or end
    /// for the same target) waits behind it in this sender, or went before it.
    func handle(
        _ incoming: IncomingJob, job: Result<PushJob, any Error>, settlement: DeliverySettlement, overtaken: Overtaking? = nil
    ) async {
        do {
            let recorded = try await process(incoming, job: job, overtaken: overtaken)
            traces.append(recorded.trace, outcomes: recorded.outcomes) { settlement.settle(recorded: $0) }
        } catch {
            metrics.recordFailed()
            logger.error(
                "could not record a push outcome; requeueing the job",
                metadata: ServiceLogKey.metadata([.senderDeliveryTag: "\(settlement.deliveryTag)", .senderError: "\(error)"])
            )
            settlement.settle(recorded: false)
        }
    }

    /// Sends and records the outcome; returns what is committed before the ack.
    ///
    /// The checks before the send (``admit(_:attempt:overtaken:)``) and the send
    /// itself (``deliver(_:client:incoming:attempt:)``) are functions of their own: every
    /// value an async function keeps across an `await` has its own slot in its frame, and
    /// the frames of the one task each push runs in come from malloc once they pass 1 KB.
    private func process(
        _ incoming: IncomingJob, job decoded: Result<PushJob, any Error>, overtaken: Overtaking?
    ) async throws -> Recorded {
        let now = EventTime(Date())
        let attempt = Attempt(incoming, now: now)
        if attempt.count == 0, let publishedAt = incoming.headers[TranslatorHeaders.publishedAt]?.intValue {
            // First attempts only: a retry's wait is its tier's delay, not the queue's.
            metrics.waited(publishedMilliseconds: publishedAt, nowMilliseconds: now.millisecondsSince1970)
        }
        switch try await admit(decoded, attempt: attempt, overtaken: overtaken) {
        case .send(let job, let client):
            return try await deliver(job, client: client, incoming: incoming, attempt: attempt)
        case .dropped(let recorded):
            return recorded
        case .refused(let refusal):
            return try await refuse(refusal, incoming: incoming, attempt: attempt)
        }
    }

    /// What the checks before a send decided.
    private enum Admission {
        case send(PushJob, APNsClient)
        /// Not worth sending (stale, superseded, expired, after its activity's end).
        case dropped(Recorded)
        /// Dead-lettered or parked in a retry tier instead of sent.
        case refused(Refusal)
    }

    private enum Refusal {
        case notAJob(any Error)
        /// No APNs credentials for the job's app here.
        case unknownApp(PushJob)
        /// The device is throttled after a 429 for this long yet.
        case backingOff(PushJob, Duration)
    }

    private func admit(_ decoded: Result<PushJob, any Error>, attempt: Attempt, overtaken: Overtaking?) async throws -> Admission {
        let job: PushJob
        switch decoded {
        case .success(let decoded): job = decoded
        case .failure(let error): return .refused(.notAJob(error))
        }
        guard let client = clients.client(for: job) else { return .refused(.unknownApp(job)) }

        // Before the back-off: a job not worth sending is dropped, not parked in a tier.
        var lastApplied: Int64?
        if SendGate.needsLastApplied(job, returning: attempt.returning),
            let lastEventAt = try await store.activity(id: job.activityId)?.lastEventAt
        {
            lastApplied = lastEventAt.millisecondsSince1970
        }
        let gate = SendGate.decide(
            job, nowMilliseconds: attempt.now.millisecondsSince1970, returning: attempt.returning, lastAppliedMilliseconds: lastApplied,
            overtaken: overtaken
        )
        if let dropReason = gate.dropReason {
            metrics.dropped(reason: dropReason)
            metrics.finished("dropped", reason: dropReason)
            let why = switch (gate, overtaken) {
            case (.superseded, .queued): "; a newer job for the same target is queued"
            case (.superseded, .sent): "; a newer job for the same target went before it"
            default: ""
            }
            return .dropped(Recorded(
                trace: [trace(job, .dropped, "\(dropReason): not sent (attempt \(attempt.count + 1)\(why))")],
                outcomes: outcome(.dropped, job, reason: dropReason)))
        }
        if case .device(let token, _, _) = job.target, let remaining = backoff.remaining(for: token) {
            return .refused(.backingOff(job, remaining))
        }
        return .send(job, client)
    }

    /// Records a job that is not sent: dead-lettered, or parked in a retry tier.
    private func refuse(_ refusal: Refusal, incoming: IncomingJob, attempt: Attempt) async throws -> Recorded {
        switch refusal {
        case .notAJob(let error):
            return try await deadLetter(
                body: incoming.body, job: nil, attempt: attempt,
                reason: .invalidJob, message: "the message is not a push job: \(error)"
            )
        case .unknownApp(let job):
            // No credentials for this app here: a deployment problem, not a transient one,
            // so on-call sees it in the DLQ and can replay once the app is configured.
            return try await deadLetter(
                body: incoming.body, job: job, attempt: attempt,
                reason: .unknownApp,
                message: "this sender has no APNs credentials for bundle id \(job.bundleId)"
            )
        case .backingOff(let job, let remaining):
            // Sending now would only earn another 429 and lengthen the device's throttle.
            return try await retry(
                .deferral(attempt: attempt.count, tiers: tiers, wait: remaining), body: incoming.body,
                messageID: incoming.messageID, job: job, attempt: attempt,
                reason: "token backing off after TooManyRequests, not sent", apnsReason: "TooManyRequests"
            )
        }
    }

    /// Opens the activity's channel if the job is a broadcast, sends, and records the answer.
    private func deliver(_ job: PushJob, client: APNsClient, incoming: IncomingJob, attempt: Attempt) async throws -> Recorded {
        let destination: Destination
        switch job.target {
        case .device(let token, _, _):
            destination = .device(token: token)
        case .channel(let key):
            do {
                destination = .channel(id: try await channels.openChannel(domain: job.domain, key: key, client: client).channelID)
            } catch let error as APNsError {
                // Creating the channel failed at APNs: the same outcomes as a failed send.
                return try await record(SendResolution(error), job: job, body: incoming.body,
                                        messageID: incoming.messageID, attempt: attempt, client: client, channelID: nil)
            }
        }
        let (resolution, uniqueID) = await send(job, to: destination, via: client)
        var channelID: String?
        if case .channel(let id) = destination { channelID = id }
        return try await record(resolution, job: job, body: incoming.body, messageID: incoming.messageID,
                                attempt: attempt, client: client, channelID: channelID, uniqueID: uniqueID)
    }

    /// Where a job goes at APNs, its channel resolved.
    private enum Destination {
        case device(token: String)
        case channel(id: String)
    }

    /// Sends and classifies the answer; a 200's `apns-unique-id` (the sandbox's delivery-log id)
    /// comes along for the trace.
    private func send(_ job: PushJob, to destination: Destination, via client: APNsClient) async
        -> (SendResolution, uniqueID: String?)
    {
        let priority: APNsPriority = job.priority == .high ? .high : .low
        let started = ContinuousClock.now
        defer {
            let elapsed = (ContinuousClock.now - started).components
            metrics.sent(durationNanoseconds: elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000)
        }
        do throws(APNsError) {
            switch destination {
            case .device(let token):
                let response = try await client.send(
                    APNsLiveActivityPush(
                        deviceToken: token,
                        payload: Array(job.payload),
                        priority: priority,
                        expiration: job.expiration.map { APNsExpiration.at(Date(timeIntervalSince1970: TimeInterval($0))) },
                        apnsID: job.apnsId
                    )
                )
                return (.delivered, response.uniqueID)
            case .channel(let channelID):
                // The translator set apns-expiration to agree with the channel's storage policy
                // (0 on a channel that stores nothing); an older job without one gets 0, which
                // every channel accepts.
                let expiration = job.expiration.map { $0 == 0 ? APNsExpiration.immediately : .at(Date(timeIntervalSince1970: TimeInterval($0))) }
                let response = try await client.broadcast(
                    APNsBroadcastPush(
                        channelID: channelID, payload: Array(job.payload), priority: priority,
                        expiration: expiration ?? .immediately, requestID: job.apnsId)
                )
                return (.delivered, response.uniqueID)
            }
        } catch {
            return (SendResolution(error), nil)
        }
    }

    // MARK: Outcomes

    private func record(
        _ resolution: SendResolution, job: PushJob, body: Data, messageID: String?, attempt: Attempt, client: APNsClient,
        channelID: String?, uniqueID: String? = nil
    ) async throws -> Recorded {
        guard case .delivered = resolution else {
            return try await recordFailure(resolution, job: job, body: body, messageID: messageID, attempt: attempt)
        }
        if case .device(let token, _, _) = job.target { backoff.delivered(token) }
        metrics.finished("delivered")
        metrics.delivered(eventMilliseconds: job.sequence, nowMilliseconds: EventTime(Date()).millisecondsSince1970)
        if job.isTerminal, case .channel(let key) = job.target, let channelID {
            await closeChannel(job: job, key: key, channelID: channelID, client: client)
        }
        var delivered = "delivered (200), attempt "
        delivered.reserveCapacity(110)
        delivered += String(attempt.count + 1)
        delivered += ", apns-id "
        delivered += job.apnsId.hyphenated(uppercase: false)
        if let uniqueID {
            delivered += ", apns-unique-id "
            delivered += uniqueID
        }
        return Recorded(trace: [trace(job, .apnsOutcome, delivered)], outcomes: outcome(.delivered, job))
    }

    /// Every answer but a delivery, apart from it so its frame's slots stay off the common path.
    private func recordFailure(
        _ resolution: SendResolution, job: PushJob, body: Data, messageID: String?, attempt: Attempt
    ) async throws -> Recorded {
        switch resolution {
        case .delivered:
            preconditionFailure("a delivery is recorded by record(_:job:body:messageID:attempt:client:channelID:uniqueID:)")

        case .tokenUnregistered(let unregisteredAt):
            guard case .device(let token, _, _) = job.target else {
                return try await deadLetter(body: body, job: job, attempt: attempt, reason: .apns("Unregistered"),
                                            message: "APNs answered 410 to a broadcast")
            }
            // Keeps a token the app registered again after APNs saw it go away.
            let deleted = try await store.deleteToken(token, registeredBefore: unregisteredAt ?? attempt.now.date)
            metrics.finished("unregistered", reason: "Unregistered")
            return Recorded(
                trace: [trace(job, .apnsOutcome, "410 Unregistered; \(deleted) registration(s) of \(job.target.logDescription) deleted")],
                outcomes: outcome(.deviceGone, job, reason: "Unregistered"))

        case .tokenRejected(let reason):
            if case .device(let token, _, _) = job.target {
                _ = try await store.deleteToken(token)
            }
            return try await deadLetter(body: body, job: job, attempt: attempt, reason: reason,
                                        message: "APNs rejected \(job.target.logDescription) (\(reason)); the token was deleted")

        case .throttled:
            guard case .device(let token, _, _) = job.target else {
                return try await retry(.after(attempt: attempt.count, tiers: tiers), body: body, messageID: messageID,
                                       job: job, attempt: attempt, reason: "TooManyRequests", apnsReason: "TooManyRequests")
            }
            let wait = backoff.throttled(token)
            return try await retry(.after(attempt: attempt.count, tiers: tiers, atLeast: wait), body: body, messageID: messageID,
                            job: job, attempt: attempt, reason: "TooManyRequests", apnsReason: "TooManyRequests")

        case .retry(let reason):
            // "InternalServerError: detail" or "transport: detail": the metric keeps the first part.
            return try await retry(.after(attempt: attempt.count, tiers: tiers), body: body, messageID: messageID,
                            job: job, attempt: attempt, reason: reason,
                            apnsReason: String(reason.prefix { $0 != ":" }))

        case .deadLetter(let reason, let message):
            return try await deadLetter(body: body, job: job, attempt: attempt, reason: reason, message: message)
        }
    }

    /// Retries through the tiers; `reason` is for the trace, `apnsReason` (APNs' reason,
    /// `HTTP <status>` or `transport`) for the metrics, whose `retries_total` has the tier.
    private func retry(
        _ plan: RetryPlan, body: Data, messageID: String?, job: PushJob, attempt: Attempt, reason: String, apnsReason: String
    ) async throws -> Recorded {
        switch plan {
        case .tier(let tier, let nextAttempt):
            try await publisher.retry(
                body: body, messageID: messageID, lane: job.target.laneKey(activity: job.activityId), tier: tier, attempt: nextAttempt, firstAttemptAt: attempt.firstAt
            )
            metrics.retried(tier: tier.name)
            metrics.finished("retried", reason: apnsReason)
            // Not an outcome yet: the job's end comes after the tier.
            return Recorded(trace: [trace(job, .retried, "\(reason); attempt \(nextAttempt + 1) after tier \(tier.name)")])
        case .exhausted(let attempts):
            return try await deadLetter(
                body: body, job: job,
                attempt: Attempt(count: attempts - 1, firstAt: attempt.firstAt, now: attempt.now, deaths: attempt.deaths),
                reason: .retriesExhausted, message: "still failing after \(attempts) attempts; last: \(reason)"
            )
        }
    }

    private func deadLetter(
        body: Data, job: PushJob?, attempt: Attempt, reason: DeadLetterReason, message: String
    ) async throws -> Recorded {
        let letter = DeadLetter(
            reason: reason, message: message, originalBody: body, attempts: attempt.count + 1,
            firstAttemptAt: attempt.firstAt, lastAttemptAt: attempt.now,
            domain: job?.domain, activityId: job?.activityId, eventId: job?.eventId, jobId: job?.jobId
        )
        let letterID = try await publisher.deadLetter(letter, deaths: attempt.deaths)
        metrics.deadLettered(reason: reason.rawValue)
        metrics.finished("dead-lettered", reason: reason.rawValue)
        logger.notice(
            "push dead-lettered",
            metadata: ServiceLogKey.metadata([
                .pushReason: "\(reason)",
                .pushJobID: "\(job?.jobId ?? "-")",
                .pushActivityID: "\(job?.activityId ?? "-")",
                .pushTarget: "\(job?.target.logDescription ?? "-")",
            ])
        )
        guard let job else { return Recorded(trace: []) }
        return Recorded(
            trace: [trace(job, .deadLettered, "\(reason): \(message)")],
            outcomes: outcome(.deadLettered, job, reason: reason.rawValue, deadLetterID: letterID))
    }

    /// The job's outcome, when its domain's producers asked for outcomes.
    private func outcome(_ kind: EventOutcome.Kind, _ job: PushJob, reason: String? = nil, deadLetterID: String? = nil) -> [AMQPMessage] {
        let message = outcomes?.message(
            for: job.domain,
            EventOutcome(
                kind, eventId: job.eventId, domain: job.domain, activityId: job.activityId, app: job.bundleId, reason: reason,
                apnsId: kind == .delivered ? job.apnsId.hyphenated(uppercase: false) : nil,
                target: job.target.logDescription, deadLetterId: deadLetterID, push: job.event.rawValue),
            key: job.jobId)
        return message.map { [$0] } ?? []
    }

    private func closeChannel(job: PushJob, key: String, channelID: String, client: APNsClient) async {
        do {
            try await channels.closeChannel(domain: job.domain, key: key, channelID: channelID, client: client)
        } catch {
            // The end was delivered; a channel left open only costs quota, so this is not
            // worth retrying the push for. On-call sees it in the log.
            logger.warning(
                "could not delete the channel after its end",
                metadata: ServiceLogKey.metadata([.pushActivityID: "\(job.activityId)", .senderError: "\(error)"])
            )
        }
    }

    /// One trace line per push, built in storage reserved once: interpolated, the line grew
    /// its storage several times and cost 9,700 instructions a push (5 % of the sender).
    private func trace(_ job: PushJob, _ kind: TraceEntry.Kind, _ detail: String) -> TraceEntry {
        var line = String()
        line.reserveCapacity(80 + job.eventId.utf8.count + detail.utf8.count)
        line += "job "
        line += Substring(job.jobId.unicodeScalars.prefix(PushJob.shownIDLength))  // hex: no need to walk grapheme clusters
        line += " event "
        line += job.eventId
        line += " "
        line += job.event.rawValue
        line += " to "
        job.target.writeLogDescription(to: &line)
        line += ": "
        line += detail
        return TraceEntry(activityID: job.activityId, at: Date(), kind: kind, detail: line)
    }
}
