import Foundation

// Tests: Tests/LivelineStoreTests/EventClaimConformanceTests.swift

/// An event the api was handed over HTTPS, claimed by its id before it is published: the
/// id is the producer's idempotency key (``ActivityStore/claimEvents(_:now:)``).
public struct EventClaim: Sendable, Hashable {
    /// The CloudEvents `id`.
    public var eventID: String
    /// The producer that sent it.
    public var producer: String
    /// A digest of the event as it is published, to tell a retry from another event reusing the id.
    public var digest: String

    public init(eventID: String, producer: String, digest: String) {
        self.eventID = eventID
        self.producer = producer
        self.digest = digest
    }
}

/// What to do with a claimed event.
public enum EventClaimOutcome: Sendable, Hashable {
    /// Publish it: the id is new, or an earlier attempt with the same body never got its
    /// confirm (publishing again is safe: the translator drops a second copy of an event id).
    case publish
    /// The same body was published and confirmed before: answer as before, publish nothing.
    case alreadyPublished
    /// The id was taken by an event with another body.
    case conflict
}

extension EventClaimOutcome {
    /// The outcome of a claim whose id was already there, from the stored row (both stores).
    init(stored digest: String?, publishedMs: Int64?, claim: EventClaim) {
        guard let digest, digest == claim.digest else {
            // A row gone between the insert and the read was pruned: the id is free again.
            self = digest == nil ? .publish : .conflict
            return
        }
        self = publishedMs == nil ? .publish : .alreadyPublished
    }
}
