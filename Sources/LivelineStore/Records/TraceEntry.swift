import Foundation

// Tests: Tests/LivelineStoreTests/ChannelAndTraceConformanceTests.swift

/// One line of an activity's append-only history, for answering "why didn't it update?".
public struct TraceEntry: Sendable, Hashable, Codable {
    /// What happened.
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        case eventReceived = "event-received"
        case pushDecided = "push-decided"
        case apnsOutcome = "apns-outcome"
        case dropped
        case deadLettered = "dead-lettered"
        /// The sender put the job in a retry tier.
        case retried
        /// `liveline dlq replay` republished or skipped one of the activity's dead letters.
        case replayed
    }

    public var activityID: String
    public var at: Date
    public var kind: Kind
    /// Free text for people: the event id, the decision, the APNs reason. Never a full token.
    public var detail: String

    public init(activityID: String, at: Date, kind: Kind, detail: String) {
        self.activityID = activityID
        self.at = at
        self.kind = kind
        self.detail = detail
    }
}

extension TraceEntry.Kind {
    /// A stored kind; one this build does not know (written by a newer Liveline) reads as
    /// `dropped` so an old reader can still show the entry and its detail.
    init(stored: String) {
        self = TraceEntry.Kind(rawValue: stored) ?? .dropped
    }
}
