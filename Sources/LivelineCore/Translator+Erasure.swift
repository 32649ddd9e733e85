import Foundation
import LivelineCodecs
import LivelineModels

// Tests: Tests/LivelineServicesTests/GamePipelineTests.swift

extension Translator {
    /// The end of a user's activity before the user is erased: an `end` carrying its last
    /// state, dismissed at once, to every device's update token (and on its channel for a
    /// channel domain), at priority 10 so it goes now. Nothing is left running that names
    /// the user once the store forgets them.
    ///
    /// - Returns: no jobs when the activity has ended, has no state, or its domain is
    ///   unknown or shared (a game stays for its other fans).
    public func erasureEnd(
        of activity: ActivitySnapshot, updateTokens: [(token: String, environment: APNsEnvironment)], now: Date
    ) -> [PushJob] {
        guard activity.endedAt == nil, let state = activity.lastContentState,
            let configuration = domains[activity.domain]?.configuration, !configuration.shared
        else { return [] }
        var targets = updateTokens.map { PushTarget.device(token: DeviceToken.lowercased($0.token), kind: .update, environment: $0.environment) }
        if configuration.delivery == .channel { targets.append(.channel(key: activity.id)) }
        // Newer than the last push, so ActivityKit takes it; dismissed a second before it.
        let timestamp = max(EventTime(now).unixSeconds, (activity.lastPushTimestamp ?? 0) + 1)
        let payload = JSONValue.encoded(.object(["aps": .object([
            "timestamp": .integer(timestamp), "event": .string("end"), "content-state": state,
            "dismissal-date": .integer(timestamp - 1),
        ])]))
        let eventId = "erasure:\(activity.id)"
        return targets.map { target in
            let jobId = JobIdentity.jobId(eventId: eventId, target: target)
            return PushJob(
                jobId: jobId, apnsId: JobIdentity.apnsId(jobId: jobId), activityId: activity.id, domain: activity.domain,
                eventId: eventId, eventTime: EventTime(now), userId: activity.userId, attributesType: activity.attributesType,
                target: target, bundleId: self.configuration.keys.app(of: activity.id), priority: .high, expiration: nil, event: .end,
                payload: payload, isTerminal: true, sequence: EventTime(now).millisecondsSince1970)
        }
    }
}
