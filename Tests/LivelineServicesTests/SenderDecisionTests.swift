import Foundation
import LivelineAMQP
import LivelineAPNs
import LivelineCore
import LivelineMessaging
import LivelineTestSupport
import Testing

@testable import LivelineServices

/// The pure policy: how APNs answers map to actions, which tier comes next, what is dropped.
@Suite struct SenderDecisionTests {
    private func error(_ status: Int?, _ reason: APNsReason?, timestamp: Date? = nil) -> APNsError {
        APNsError(
            outcome: status.map { APNsOutcome.classify(status: $0, reason: reason) } ?? .retriable,
            status: status, reason: reason, apnsID: nil, timestamp: timestamp, detail: ""
        )
    }

    @Test func apnsAnswersMapToTheDesignedActions() {
        let when = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(SendResolution(error(410, .unregistered, timestamp: when)) == .tokenUnregistered(unregisteredAt: when))
        #expect(SendResolution(error(400, .badDeviceToken)) == .tokenRejected(.apns("BadDeviceToken")))
        #expect(SendResolution(error(400, .deviceTokenNotForTopic)) == .tokenRejected(.apns("DeviceTokenNotForTopic")))
        #expect(SendResolution(error(429, .tooManyRequests)) == .throttled)
        #expect(SendResolution(error(413, .payloadTooLarge)).label == "dead-letter")
        #expect(SendResolution(error(413, .payloadTooLarge)) == .deadLetter(.payloadTooLarge, message: SendResolution(error(413, .payloadTooLarge)).message))
        #expect(SendResolution(error(400, .badPriority)).label == "dead-letter")
        #expect(SendResolution(error(500, .internalServerError)).label == "retry")
        #expect(SendResolution(error(503, .serviceUnavailable)).label == "retry")
        #expect(SendResolution(error(403, .expiredProviderToken)).label == "retry")
        #expect(SendResolution(.transport("GOAWAY")).label == "retry")
    }

    @Test func retriesWalkTheTiersThenExhaust() {
        let tiers = LivelineTopology.RetryTier.defaults
        #expect(RetryPlan.after(attempt: 0, tiers: tiers) == .tier(tiers[0], attempt: 1))
        #expect(RetryPlan.after(attempt: 3, tiers: tiers) == .tier(tiers[3], attempt: 4))
        #expect(RetryPlan.after(attempt: 4, tiers: tiers) == .exhausted(attempts: 5))
        // A throttled token waits at least its back-off.
        #expect(RetryPlan.after(attempt: 0, tiers: tiers, atLeast: .seconds(20)) == .tier(tiers[1], attempt: 1))
        #expect(RetryPlan.after(attempt: 0, tiers: tiers, atLeast: .seconds(3600)) == .tier(tiers[3], attempt: 1))
        // Held back unsent: the tier covers the wait and the attempt count stays.
        #expect(RetryPlan.deferral(attempt: 2, tiers: tiers, wait: .seconds(20)) == .tier(tiers[1], attempt: 2))
        #expect(RetryPlan.deferral(attempt: 4, tiers: tiers, wait: .seconds(3600)) == .tier(tiers[3], attempt: 4))
    }

    @Test func staleUpdatesAreDroppedButEndsNever() {
        let now: Int64 = 1_700_000_000_000
        var job = makeJob(target: .device(token: "ab", kind: .update), expiration: now / 1000 - 1, sequence: now - 5_000)
        #expect(SendGate.decide(job, nowMilliseconds: now, returning: false, lastAppliedMilliseconds: nil) == .expired)
        job.event = .end
        #expect(SendGate.decide(job, nowMilliseconds: now, returning: true, lastAppliedMilliseconds: now) == .send)
        job.event = .update
        // 0 on a broadcast is "deliver now, never store", not a date in 1970.
        job.expiration = 0
        #expect(SendGate.decide(job, nowMilliseconds: now, returning: false, lastAppliedMilliseconds: nil) == .send)
        job.expiration = now / 1000 + 60
        #expect(SendGate.decide(job, nowMilliseconds: now, returning: false, lastAppliedMilliseconds: now) == .send)
        #expect(SendGate.decide(job, nowMilliseconds: now, returning: true, lastAppliedMilliseconds: now) == .superseded)
        #expect(SendGate.decide(job, nowMilliseconds: now, returning: true, lastAppliedMilliseconds: now - 5_000) == .send)
        // A newer update for the target queued behind it: superseded on a first send too,
        // but an end never.
        #expect(SendGate.decide(job, nowMilliseconds: now, returning: false, lastAppliedMilliseconds: nil, overtaken: .queued)
            == .superseded)
        job.event = .end
        #expect(SendGate.decide(job, nowMilliseconds: now, returning: false, lastAppliedMilliseconds: nil, overtaken: .queued)
            == .send)
    }

    /// A job deferred while its device backed off keeps its attempt count, yet comes back
    /// from a tier after newer jobs may have been sent: it is checked as a retry is.
    @Test func aDeferredJobReturnsLikeARetry() {
        let at = EventTime(Date())
        #expect(!PushJobHandler.Attempt(count: 0, firstAt: at, now: at).returning)
        #expect(PushJobHandler.Attempt(count: 2, firstAt: at, now: at).returning)
        let deaths: AMQPFieldValue = .array([.table(["queue": "liveline.retry.5s", "count": 1])])
        #expect(PushJobHandler.Attempt(count: 0, firstAt: at, now: at, deaths: deaths).returning)
    }

    /// A copy may come after newer jobs of its lane, sent by another worker meanwhile: one the
    /// broker redelivers (the sender that held it died or lost its connection), or one a
    /// translator published again. Either is checked as a retry is; a first delivery is not.
    @Test func aCopyReturnsLikeARetry() {
        let at = EventTime(Date())
        let first = IncomingJob(body: Data(), messageID: "j-1", headers: [:], lane: "a|d")
        #expect(!PushJobHandler.Attempt(first, now: at).returning)
        var redelivered = first
        redelivered.redelivered = true
        #expect(PushJobHandler.Attempt(redelivered, now: at).returning)
        var published = first
        published.headers[AMQPMessage.resentHeader] = .bool(true)
        #expect(PushJobHandler.Attempt(published, now: at).returning)
        var retried = first
        retried.headers[SenderHeaders.attempt] = .int(1)
        let attempt = PushJobHandler.Attempt(retried, now: at)
        #expect(attempt.returning && attempt.count == 1 && attempt.firstAt == at)
    }

    @Test func throttleBackoffDoublesPerTokenAndClearsOnDelivery() {
        let backoff = TokenBackoff(initial: .seconds(1), maximum: .seconds(5))
        let now = ContinuousClock.now
        #expect(backoff.throttled("a", now: now) == .seconds(1))
        #expect(backoff.throttled("a", now: now) == .seconds(2))
        #expect(backoff.throttled("a", now: now) == .seconds(4))
        #expect(backoff.throttled("a", now: now) == .seconds(5))
        #expect(backoff.remaining(for: "a", now: now) == .seconds(5))
        #expect(backoff.remaining(for: "b", now: now) == nil)
        #expect(backoff.remaining(for: "a", now: now + .seconds(6)) == nil)
        backoff.delivered("a")
        #expect(backoff.count == 0)
    }
}

extension SendResolution {
    fileprivate var message: String {
        if case .deadLetter(_, let message) = self { return message }
        return ""
    }
}
