// Tests: Tests/LivelineCoreTests/CoalescingTests.swift

/// Coalescing a batch of events before translation: for each activity, an older
/// plain update is dropped when a newer event for the same activity is in the batch,
/// because every event carries the full state and the newer one replaces it.
///
/// Terminal events are never coalesced away (the end must be sent), and neither are
/// events that carry `attributes` (they may be the only source of the attributes a
/// push-to-start needs). What is coalesced here are candidates: once the activity's state
/// is loaded, a candidate that a person would notice (``Translator/isNoticeable(_:after:)``)
/// is translated after all.
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
        let newest = Self.newestByActivity(events)
        var batch = CoalescedBatch(kept: [], superseded: [])
        for event in events {
            if let winner = newest[Self.coalescingKey(event)], winner.id != event.id, winner.time > event.time,
               isCoalescible(event) {
                batch.superseded.append(.init(event: event, supersededBy: winner.id))
            } else {
                batch.kept.append(event)
            }
        }
        return batch
    }

    /// The events of a batch that a later batch already received makes pointless: plain
    /// updates with a newer event for the same activity in `later`. Maps each such event's
    /// id to the id of the newer event. Pure.
    ///
    /// Under a backlog the next batch is parsed while this one is planned, so an update
    /// that is stale before it leaves need not be published at all. Dropping it is safe
    /// even if the later batch fails: that batch is redelivered, and its full state is newer.
    public func supersededAhead(_ events: [DomainEvent], by later: [DomainEvent]) -> [String: String] {
        guard !later.isEmpty else { return [:] }
        let newest = Self.newestByActivity(later)
        var superseded: [String: String] = [:]
        for event in events {
            if let winner = newest[Self.coalescingKey(event)], winner.time > event.time, isCoalescible(event) {
                superseded[event.id] = winner.id
            }
        }
        return superseded
    }

    /// Whether `event`, sent as an update after `previous`, would be noticed: an alert, or
    /// priority 10 (``PushJob/isNoticeable``). Such an update is never coalesced away: the
    /// newer state after it reaches the device silently, and the moment it announces (the
    /// driver arrived, a goal) would never show. Pure, and cheap: no payload is built.
    public func isNoticeable(_ event: DomainEvent, after previous: ActivitySnapshot?) -> Bool {
        guard let policy = domains[event.domain]?.configuration.policy else { return false }
        var style = PushStyle.choose(for: .update, event: event, previous: previous, policy: policy)
        if let overrides = event.overrides { style.apply(overrides, eventTime: event.time) }
        // A replay capped at priority 5 goes out with no alert (``translate``).
        if let cap = event.priorityCap, style.priority > cap { return false }
        return style.alert != nil || style.priority == .high
    }

    /// Terminal events must be sent, and an event with `attributes` may be the only source of
    /// what a push-to-start needs.
    private func isCoalescible(_ event: DomainEvent) -> Bool {
        let isTerminal = domains[event.domain]?.configuration.policy.policy(for: event.status).isTerminal ?? false
        return !isTerminal && event.attributes == nil
    }

    private static func coalescingKey(_ event: DomainEvent) -> String {
        event.domain + "\u{0}" + event.activityId
    }

    private static func newestByActivity(_ events: [DomainEvent]) -> [String: DomainEvent] {
        var newest: [String: DomainEvent] = [:]
        for event in events {
            let key = coalescingKey(event)
            if let current = newest[key], current.time >= event.time { continue }
            newest[key] = event
        }
        return newest
    }
}
