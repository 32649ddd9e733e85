import Foundation
import LivelineCodecs
import LivelineCore
import LivelineStore

/// What `liveline dlq replay` does with one dead letter, decided from the letter and the
/// activity as the store has it now. Pure: no I/O, so every rule is tested alone.
///
/// - Events the translator refused (`invalid-event`, `schema-mismatch`, `payload-too-large`,
///   or moved by the broker from the translate queue) go back to `liveline.events`: the
///   translator judges them again, with its usual rules (stale, duplicate, after end). An
///   `over-budget` event goes back capped at priority 5, which spends no budget.
/// - Push jobs are skipped when sending would be wrong or pointless: the activity is
///   unknown, ended (for an update), past its lifetime, superseded by a newer applied event
///   (for an update nobody would notice: ``PushJob/isNoticeable``), or the device's token is
///   gone. Otherwise the job is sent again, re-stamped so ActivityKit and the sender accept
///   it: a start, or an alerting or priority-10 update, carries the activity's current state
///   when that is newer than the letter's (the update then with a timestamp newer than the
///   last push, so that it shows), the stale date moves forward by
///   the job's own freshness window, and `aps.timestamp` is never older than the last push.
public enum ReplayDecision: Sendable, Hashable {
    /// Republish the event to the events exchange, with an optional priority cap.
    case republishEvent(priorityCap: PushPriority?)
    /// Publish this job (possibly re-stamped) to the push exchange; `note` says what changed.
    case sendJob(PushJob, note: String)
    /// Do not send; the reason is one of ``SkipReason``'s.
    case skip(SkipReason)

    /// Why a letter is not sent again.
    public enum SkipReason: String, Sendable, Hashable, CaseIterable {
        /// The body is neither a readable event nor a push job.
        case unreadable
        /// The store has no such activity (never created, or removed).
        case activityUnknown = "activity-unknown"
        /// An update for an activity that has ended since: it would bring it back.
        case ended
        /// Past the 8-hour lifetime (12 hours for an end): iOS has ended it.
        case pastLifetime = "past-lifetime"
        /// A newer event was applied for the activity; the update would roll it back.
        case superseded
        /// The device's update token is no longer registered (410, BadDeviceToken, or removed).
        case tokenRemoved = "token-removed"
        /// Re-stamped with the current state, the payload is over APNs' 4096 bytes.
        case payloadTooLarge = "payload-too-large"
    }

    /// Decides for one letter.
    ///
    /// - Parameters:
    ///   - activity: the activity now, for job letters (nil when the store has none).
    ///   - updateTokens: the activity's registered update tokens now.
    public static func decide(
        _ letter: DeadLetterRecord, activity: ActivityRecord?, updateTokens: Set<String>, now: Date
    ) -> ReplayDecision {
        switch letter.payloadKind {
        case .event:
            return .republishEvent(priorityCap: letter.reason == DeadLetterReason.overBudget.rawValue ? .low : nil)
        case .unknown:
            return .skip(.unreadable)
        case .job:
            guard let job = try? PushJob(json: letter.body) else { return .skip(.unreadable) }
            return decide(job: job, activity: activity, updateTokens: updateTokens, now: now)
        }
    }

    static func decide(job: PushJob, activity: ActivityRecord?, updateTokens: Set<String>, now: Date) -> ReplayDecision {
        guard let activity else { return .skip(.activityUnknown) }
        if job.event == .update, activity.endedAt != nil { return .skip(.ended) }
        let lifetime = TimeInterval(LifecycleGuard.lifetimeSeconds) + (job.event == .end ? 4 * 3600 : 0)
        if let started = activity.startedAt, now.timeIntervalSince(started) >= lifetime { return .skip(.pastLifetime) }
        let lastApplied = activity.lastEventAt?.millisecondsSince1970
        let overtaken = lastApplied.map { $0 > job.sequence } ?? false
        // An update a person would notice (an alert, priority 10) is not coalesced away here
        // either: it goes out with the current state, as a start does, so it rolls nothing back.
        if job.event == .update, overtaken, !job.isNoticeable { return .skip(.superseded) }
        if case .device(let token, .update, _) = job.target, !updateTokens.contains(token) { return .skip(.tokenRemoved) }

        var notes: [String] = []
        guard var aps = (try? JSONValue.parse(job.payload))?.objectValue, case .object(var fields)? = aps["aps"] else {
            return .skip(.unreadable)
        }
        if job.event != .end, overtaken, let lastApplied, let state = activity.contentState,
            let current = try? JSONValue.parse(state)
        {
            fields["content-state"] = current
            notes.append("current state of \(RFC3339.format(EventTime(millisecondsSince1970: lastApplied)))")
            // ActivityKit shows an update only when it is newer than the last one shown.
            if job.event == .update, let last = activity.lastPushTimestamp {
                let raised = max(Int64(now.timeIntervalSince1970), last + 1)
                fields["timestamp"] = .integer(raised)
                notes.append("timestamp raised to \(raised)")
            }
        }
        if let last = activity.lastPushTimestamp, case .integer(let stamp)? = fields["timestamp"], stamp < last {
            fields["timestamp"] = .integer(last)
            notes.append("timestamp raised to \(last)")
        }
        var restamped = job
        if let expiration = job.expiration, expiration <= Int64(now.timeIntervalSince1970) {
            // The sender drops an update past its stale date; keep the job's own freshness window.
            let stamp = fields["timestamp"].flatMap { if case .integer(let value) = $0 { value } else { nil } } ?? job.sequence / 1000
            let fresh = Int64(now.timeIntervalSince1970) + max(60, expiration - stamp)
            restamped.expiration = fresh
            if fields["stale-date"] != nil { fields["stale-date"] = .integer(fresh) }
            notes.append("stale date moved to \(fresh)")
        }
        aps["aps"] = .object(fields)
        if !notes.isEmpty { restamped.payload = JSONValue.encoded(.object(aps)) }
        guard restamped.payload.count <= Translator.maxPayloadBytes else { return .skip(.payloadTooLarge) }
        return .sendJob(restamped, note: notes.isEmpty ? "as it was" : notes.joined(separator: "; "))
    }

    /// The decision with its update or end stamped after every push this replay already
    /// sent for the activity (`sent`, the newest `aps.timestamp` of each), which it then
    /// records. An overtaken alert goes out with a timestamp newer than the last push, so a
    /// later letter of the same activity in the same replay must be newer still, or
    /// ActivityKit would ignore it and the device would see the letters out of order.
    func stamped(after sent: inout [String: Int64]) -> ReplayDecision {
        guard case .sendJob(var job, let note) = self, job.event != .start,
            var aps = (try? JSONValue.parse(job.payload))?.objectValue, case .object(var fields)? = aps["aps"],
            case .integer(let stamp)? = fields["timestamp"]
        else { return self }
        guard let newest = sent[job.activityId], stamp <= newest else {
            sent[job.activityId] = max(stamp, sent[job.activityId] ?? stamp)
            return self
        }
        fields["timestamp"] = .integer(newest + 1)
        aps["aps"] = .object(fields)
        job.payload = JSONValue.encoded(.object(aps))
        sent[job.activityId] = newest + 1
        return .sendJob(job, note: (note == "as it was" ? "" : note + "; ") + "timestamp raised to \(newest + 1), after this replay's earlier push")
    }
}
