import Foundation

// Tests: Tests/LivelineCoreTests/EnvelopeParsingTests.swift

/// One entry of the dead-letter queue: what failed, why, and the original bytes so
/// on-call can replay it.
///
/// JSON: `reason` (canonical string), `message`, `originalBody` (base64 with the
/// default data strategy),
/// `attempts`, `firstAttemptAt`/`lastAttemptAt` (RFC 3339), and the optional
/// `domain`, `activityId`, `eventId`, `jobId`.
public struct DeadLetter: Codable, Hashable, Sendable {
    /// Why it was dead-lettered.
    public var reason: DeadLetterReason
    /// A human explanation.
    public var message: String
    /// The original message body: the event for translator dead letters, the
    /// encoded ``PushJob`` for sender dead letters.
    public var originalBody: Data
    /// How many times delivery was attempted (1 for translator dead letters).
    public var attempts: Int
    /// The first attempt.
    public var firstAttemptAt: EventTime
    /// The last attempt.
    public var lastAttemptAt: EventTime
    /// The domain, when known.
    public var domain: String?
    /// The activity, when known.
    public var activityId: String?
    /// The event id, when known.
    public var eventId: String?
    /// The job id, for sender dead letters.
    public var jobId: String?

    /// Creates a dead letter.
    public init(
        reason: DeadLetterReason, message: String, originalBody: Data, attempts: Int = 1,
        firstAttemptAt: EventTime, lastAttemptAt: EventTime? = nil,
        domain: String? = nil, activityId: String? = nil, eventId: String? = nil, jobId: String? = nil
    ) {
        self.reason = reason
        self.message = message
        self.originalBody = originalBody
        self.attempts = attempts
        self.firstAttemptAt = firstAttemptAt
        self.lastAttemptAt = lastAttemptAt ?? firstAttemptAt
        self.domain = domain
        self.activityId = activityId
        self.eventId = eventId
        self.jobId = jobId
    }

    /// The dead letter for an event that could not be parsed.
    public init(rejecting body: Data, error: EventError, at now: EventTime) {
        self.init(reason: error.deadLetterReason, message: error.message, originalBody: body, firstAttemptAt: now)
    }
}
