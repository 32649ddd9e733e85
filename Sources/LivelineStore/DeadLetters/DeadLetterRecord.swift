import Foundation

// Tests: Tests/LivelineStoreTests/DeadLetterConformanceTests.swift

/// One dead letter as on-call sees it, whatever put it in `liveline.dead`: the translator,
/// the sender, or the broker itself (delivery limit, reject, TTL).
///
/// The keeper writes one row per message it takes off the queue, idempotent by ``id``, so
/// the queue is only a buffer and this table is what `liveline dlq` reads and replays.
public struct DeadLetterRecord: Sendable, Hashable, Codable {
    /// Who dead-lettered the message.
    public enum Source: String, Sendable, Hashable, Codable, CaseIterable {
        /// The translator refused an event (`invalid-event`, `schema-mismatch`, `over-budget`, …).
        case translator
        /// The sender gave up on a push job (an APNs reason, `retries-exhausted`, …).
        case sender
        /// The broker moved the message here itself (`delivery_limit`, `rejected`, `expired`, …).
        case broker
    }

    /// What ``body`` holds, which decides how a replay republishes it.
    public enum PayloadKind: String, Sendable, Hashable, Codable {
        /// A CloudEvent for `liveline.events`.
        case event
        /// A push job for `liveline.push`.
        case job
        /// Neither could be told (a message from an unknown queue).
        case unknown
    }

    /// One entry of the broker's `x-death` history, newest first.
    public struct Death: Sendable, Hashable, Codable {
        public var queue: String
        public var reason: String
        public var count: Int64
        public var exchange: String
        public var routingKeys: [String]
        public var time: Date?

        public init(queue: String, reason: String, count: Int64, exchange: String, routingKeys: [String], time: Date?) {
            self.queue = queue
            self.reason = reason
            self.count = count
            self.exchange = exchange
            self.routingKeys = routingKeys
            self.time = time
        }
    }

    /// What a replay did with the letter.
    public struct Resolution: Sendable, Hashable, Codable {
        /// `replayed`, or `skipped: <reason>`.
        public var outcome: String
        public var at: Date
        /// How many times the letter was resolved (more than 1 only with `--force`).
        public var count: Int

        public init(outcome: String, at: Date, count: Int) {
            self.outcome = outcome
            self.at = at
            self.count = count
        }

        /// `replayed`, `skipped` (or `pending` for no resolution), for filtering.
        public var state: DeadLetterState { outcome == "replayed" ? .replayed : .skipped }
    }

    /// Stable across redeliveries of the same message, unique per dead-lettering.
    public var id: String
    /// Liveline's reason (`over-budget`, `BadDeviceToken`, …) or the broker's (`delivery_limit`, …).
    public var reason: String
    public var source: Source
    /// A human explanation.
    public var message: String
    public var domain: String?
    public var activityID: String?
    public var eventID: String?
    public var jobID: String?
    public var payloadKind: PayloadKind
    /// The original event or job, byte for byte.
    public var body: Data
    /// The routing key to republish ``body`` with.
    public var routingKey: String
    /// Delivery attempts before it was given up.
    public var attempts: Int
    public var firstFailedAt: Date
    public var lastFailedAt: Date
    /// When the keeper stored it.
    public var keptAt: Date
    /// The broker's `x-death` history, newest first; empty when the broker never moved it.
    public var deaths: [Death]
    /// Set once a replay sent or skipped it.
    public var resolution: Resolution?

    public init(
        id: String, reason: String, source: Source, message: String, domain: String? = nil, activityID: String? = nil,
        eventID: String? = nil, jobID: String? = nil, payloadKind: PayloadKind, body: Data, routingKey: String,
        attempts: Int, firstFailedAt: Date, lastFailedAt: Date, keptAt: Date, deaths: [Death] = [],
        resolution: Resolution? = nil
    ) {
        self.id = id
        self.reason = reason
        self.source = source
        self.message = message
        self.domain = domain
        self.activityID = activityID
        self.eventID = eventID
        self.jobID = jobID
        self.payloadKind = payloadKind
        self.body = body
        self.routingKey = routingKey
        self.attempts = attempts
        self.firstFailedAt = firstFailedAt
        self.lastFailedAt = lastFailedAt
        self.keptAt = keptAt
        self.deaths = deaths
        self.resolution = resolution
    }

    /// Pending, replayed or skipped.
    public var state: DeadLetterState { resolution?.state ?? .pending }
}

/// Where a dead letter stands with on-call.
public enum DeadLetterState: String, Sendable, Hashable, Codable, CaseIterable {
    /// Not replayed yet.
    case pending
    /// Republished by a replay.
    case replayed
    /// A replay decided not to send it (ended, superseded, …).
    case skipped
}

/// Which dead letters an on-call command works on. Every field narrows; none matches all.
public struct DeadLetterFilter: Sendable, Hashable {
    public var reason: String?
    public var domain: String?
    /// The activity's key (``AppKeys``).
    public var activityID: String?
    /// Only the letters of this app's activities (the bundle id their keys begin with).
    public var app: String?
    /// Last failure at or after.
    public var since: Date?
    /// Last failure before.
    public var until: Date?
    public var state: DeadLetterState?
    /// Kept before: a replay takes only the letters there were when it began, so a letter
    /// its own republish brings back (the failure repeats) waits for the next replay.
    public var keptBefore: Date?

    public init(
        reason: String? = nil, domain: String? = nil, activityID: String? = nil, app: String? = nil, since: Date? = nil,
        until: Date? = nil, state: DeadLetterState? = nil, keptBefore: Date? = nil
    ) {
        self.reason = reason
        self.domain = domain
        self.activityID = activityID
        self.app = app
        self.since = since
        self.until = until
        self.state = state
        self.keptBefore = keptBefore
    }
}

/// One line of an activity's trace with its position, so a reader can ask for what came after.
public struct TraceLine: Sendable, Hashable {
    /// Increases with every line the store appends.
    public var sequence: Int64
    public var entry: TraceEntry

    public init(sequence: Int64, entry: TraceEntry) {
        self.sequence = sequence
        self.entry = entry
    }
}
