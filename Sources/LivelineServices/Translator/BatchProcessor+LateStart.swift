import Foundation
import LivelineCore
import LivelineStore

// Tests: Tests/LivelineServicesTests/GamePipelineTests.swift

extension BatchProcessor {
    /// Starts the devices that came after their live game's start (``ActivityStore/claimLateStarts(now:startedAfter:limit:)``):
    /// claims up to `limit`, translates each game's start for them as the game stands now,
    /// publishes the jobs with confirms and traces each game's. What could not be published
    /// is given back for the next round; a worker that dies between the claim and the confirm
    /// loses its round (a late start is at most once, never twice).
    ///
    /// - Returns: how many late starts it claimed (`limit` means there may be more).
    func startLate(limit: Int, now: Date) async throws -> Int {
        let lifetime = TimeInterval(LifecycleGuard.lifetimeSeconds)
        let starts = try await store.claimLateStarts(now: now, startedAfter: now.addingTimeInterval(-lifetime), limit: limit)
        guard !starts.isEmpty else { return 0 }
        var jobs: [PushJob] = []
        var trace: [TraceEntry] = []
        var sends: [TranslationDecision.Send] = []
        do {
            for (activityID, devices) in Dictionary(grouping: starts, by: \.activityID).sorted(by: { $0.key < $1.key }) {
                guard let decision = try await lateStart(of: activityID, devices: devices.map(\.token), now: now) else { continue }
                switch decision {
                case .send(let send):
                    jobs += send.jobs
                    sends.append(send)
                    trace.append(TraceEntry(activityID: activityID, at: now, kind: .pushDecided, detail:
                        "late start for \(devices.count) device(s) that came after the start; " + send.traceNotes.joined(separator: "; ")))
                case .drop(let drop):
                    trace.append(TraceEntry(activityID: activityID, at: now, kind: .dropped,
                                            detail: "late start for \(devices.count) device(s) not sent: \(drop.message)"))
                case .deadLetter(let rejection):
                    trace.append(TraceEntry(activityID: activityID, at: now, kind: .dropped,
                                            detail: "late start for \(devices.count) device(s) not sent: \(rejection.message)"))
                }
            }
            if !jobs.isEmpty {
                let batch = PreparedBatch(
                    outgoing: [], jobsToPublish: jobs, publishedAt: EventTime(Date()), received: 0, translated: 0,
                    jobs: jobs.count, downgraded: 0, dropped: [:], deadLettered: [:], startedPublishing: .now,
                    counts: JobCounts(sends))
                try await confirm(batch, submitted: try await submit(batch))
            }
        } catch {
            try? await store.releaseLateStarts(starts)
            throw error
        }
        // Published: from here nothing gives the starts back, so none goes twice.
        metrics.lateStarts.increment(by: jobs.count)
        do {
            _ = try await store.applyChanges([], trace: trace)
        } catch {
            logger.warning("late starts sent, their trace lines not written", metadata: ServiceLogKey.metadata([
                .translatorError: "\(error)",
            ]))
        }
        return starts.count
    }

    /// One game's start for `devices`, on its channel where they hear it; nil if the game is
    /// no longer stored.
    private func lateStart(of activityID: String, devices: [PushToStartToken], now: Date) async throws -> TranslationDecision? {
        guard let record = try await store.activity(id: activityID), let domain = translator.domain(named: record.domain),
            let snapshot = ActivityState.snapshot(of: record, kind: domain.kind)
        else { return nil }
        var tokens = TokenSnapshot()
        tokens.start(devices)
        if domain.delivery == .channel, let channels {
            do {
                let channel = try await channels.channel(domain: domain, key: activityID)
                tokens.channelID = channel.id
                tokens.channelEnvironment = channel.environment
            } catch {
                // As at the start: every device is started per token and reports its own update token.
                metrics.channelFailures.increment()
                logger.error("could not open the activity's broadcast channel for a late start", metadata: ServiceLogKey.metadata([
                    .translatorActivity: "\(activityID)", .translatorError: "\(error)",
                ]))
            }
        }
        return translator.lateStart(of: snapshot, tokens: tokens, now: now)
    }
}
