import Foundation

// Tests: Tests/LivelineServicesTests/GamePipelineTests.swift

extension Translator {
    /// The start of a live shared activity for devices that came after its start: a fan who
    /// followed one of its topics after kick-off, or registered a new device then. It is the
    /// start its followers got, carrying the activity as it stands: the newest content-state,
    /// stamped with the newest event's time, so the channel's next update is newer and shows.
    /// A device hears the channel where the start would have put it there, and is updated per
    /// token otherwise.
    ///
    /// - Parameters:
    ///   - activity: the stored activity; its start must have gone out and it must not have ended.
    ///   - tokens: the devices to start in `audience`, with the channel, the sandbox tokens and
    ///     the iOS versions.
    /// - Returns: `send` with one start per device; `drop` when the activity is not a live,
    ///   started shared activity or a start cannot be built. The decision's snapshot and budget
    ///   are not to be stored: a late start changes neither (it spends none of the game's
    ///   budget, which is its broadcasts').
    public func lateStart(of activity: ActivitySnapshot, tokens: TokenSnapshot, now: Date) -> TranslationDecision {
        let notLive = { (reason: DropReason, why: String) in
            TranslationDecision.drop(.init(reason: reason, message: why, newSnapshot: nil, traceNotes: []))
        }
        if let endedAt = activity.endedAt {
            return notLive(.afterEnd, "activity \(activity.id) ended at \(endedAt); no late start")
        }
        guard let configuration = domains[activity.domain]?.configuration, configuration.shared,
            activity.pushToStartSentAt != nil, let state = activity.lastContentState,
            let eventId = activity.lastEventId, let time = activity.lastEventTime
        else {
            return notLive(.noTarget, "activity \(activity.id) is not a shared activity whose start went out")
        }
        let envelope = CloudEvent(
            id: "late-start:\(eventId)", source: "liveline", type: "\(activity.domain).late-start", time: time, data: .object([:]))
        // Translated as the activity's first event with topics: that is the route of a start.
        let event = DomainEvent(
            envelope: envelope, domain: activity.domain, name: "late-start",
            app: self.configuration.keys.app(of: activity.id), activityId: activity.id,
            userId: activity.userId, status: activity.lastStatus ?? "", contentState: state,
            attributes: activity.attributes, message: nil, topics: [])
        return translate(event: event, activity: nil, tokens: tokens, preferences: .defaults, budget: .empty, now: now)
    }
}
