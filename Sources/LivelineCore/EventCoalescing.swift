/// Coalescing a batch of events before translation: for each activity, an older
/// plain update is dropped when a newer event for the same activity is in the batch,
/// because every event carries the full state and the newer one replaces it.
///
/// Terminal events are never coalesced away (the end must be sent), and neither are
/// events that carry `attributes` (they may be the only source of the attributes a
/// push-to-start needs).
public struct CoalescedBatch: Hashable, Sendable {
    /// The events to translate, in their original order.
    public var kept: [DomainEvent]
    /// The events dropped, each with the id of the event that superseded it.
    public var superseded: [Superseded]

    /// One dropped event.
    public struct Superseded: Hashable, Sendable {
        /// The dropped event.
        public var event: DomainEvent
        /// The newer event for the same activity.
        public var supersededBy: String
    }
}

extension Translator {
    /// Coalesces a batch (see ``CoalescedBatch``). Pure; order of kept events is kept.
    public func coalesce(_ events: [DomainEvent]) -> CoalescedBatch {
        var newest: [String: DomainEvent] = [:]
        for event in events {
            let key = event.domain + "\u{0}" + event.activityId
            if let current = newest[key], current.time >= event.time { continue }
            newest[key] = event
        }
        var batch = CoalescedBatch(kept: [], superseded: [])
        for event in events {
            let key = event.domain + "\u{0}" + event.activityId
            let isTerminal = domains[event.domain]?.configuration.policy.policy(for: event.status).isTerminal ?? false
            if let winner = newest[key], winner.id != event.id, winner.time > event.time,
               !isTerminal, event.attributes == nil {
                batch.superseded.append(.init(event: event, supersededBy: winner.id))
            } else {
                batch.kept.append(event)
            }
        }
        return batch
    }
}
