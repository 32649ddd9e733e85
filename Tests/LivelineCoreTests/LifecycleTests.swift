import Foundation
import LivelineCore
import Testing

/// Ordering, end and lifetime rules.
@Suite("Lifecycle guard")
struct LifecycleTests {
    func dropReason(_ decision: TranslationDecision) -> DropReason? {
        if case .drop(let drop) = decision { return drop.reason }
        return nil
    }

    @Test func outOfOrderEventIsDroppedAsStale() throws {
        var run = ActivityRun()
        _ = try run.apply("ride-assigned")
        _ = try run.apply("ride-arrived")
        let before = run.snapshot
        let late = try run.apply("ride-eta-tick")
        #expect(dropReason(late) == .stale)
        #expect(run.snapshot == before)
    }

    @Test func redeliveredEventIsDroppedAsDuplicate() throws {
        var run = ActivityRun()
        _ = try run.apply("ride-assigned")
        #expect(dropReason(try run.apply("ride-assigned")) == .duplicate)
    }

    @Test func sameTimeDifferentIdIsNotNewer() throws {
        var run = ActivityRun()
        _ = try run.apply("ride-assigned")
        var copy = try Fixtures.event("ride-eta-tick")
        copy.envelope.time = try #require(run.snapshot?.lastEventTime)
        #expect(dropReason(run.apply(copy)) == .stale)
    }

    @Test func nothingIsSentAfterTheEnd() throws {
        var run = ActivityRun()
        _ = try run.apply("ride-assigned")
        _ = try run.apply("ride-cancelled")
        #expect(run.snapshot?.endedAt != nil)
        #expect(run.snapshot?.endReason == "cancelled")
        // A newer update and a newer end are both refused.
        #expect(dropReason(try run.apply("ride-arrived")) == .afterEnd)
        #expect(dropReason(try run.apply("ride-completed")) == .afterEnd)
        // Redelivery of the end itself is a duplicate, not a second end.
        #expect(dropReason(try run.apply("ride-cancelled")) == .duplicate)
    }

    @Test func noUpdatesPastEightHours() throws {
        var run = ActivityRun()
        _ = try run.apply("ride-assigned")
        // 8 h after the start (10:00:00.120) plus a second.
        let late = Fixtures.base.addingTimeInterval(8 * 3_600 + 1)
        let decision = try run.apply("ride-eta-tick", now: late)
        guard case .drop(let drop) = decision else { Issue.record("got \(decision)"); return }
        #expect(drop.reason == .pastLifetime)
        #expect(drop.newSnapshot?.endReason == "lifetime")
        #expect(drop.newSnapshot?.endedAt == EventTime(millisecondsSince1970: 1_795_255_200_120 + 8 * 3_600_000))
        // And from then on the activity counts as ended.
        #expect(dropReason(try run.apply("ride-arrived", now: late)) == .afterEnd)
    }

    @Test func theLifetimeCountsFromTheFirstPushNotTheFirstEvent() throws {
        // Booked the evening before: no device has the activity until a token is registered.
        var run = ActivityRun()
        run.tokens = TokenSnapshot()
        var booked = try Fixtures.event("ride-assigned")
        booked.envelope.time = EventTime(Fixtures.base.addingTimeInterval(-10 * 3_600))
        #expect(dropReason(run.apply(booked)) == .noTarget)
        #expect(run.snapshot?.startedAt == nil, "stored, and nothing ages")

        // The app starts the activity and registers its token; the next event is its first push.
        run.tokens = TokenSnapshot(updateTokens: [Fixtures.tokenA])
        let first = try run.apply("ride-eta-tick")
        #expect(try Fixtures.sent(first).jobs.count == 1, "10 h after the first event, and still sent")
        let started = try #require(run.snapshot?.startedAt)
        #expect(started == (try Fixtures.event("ride-eta-tick")).time)

        // From then on the 8 hours run: inside them an update goes, past them it is dropped.
        let arrived = try run.apply("ride-arrived", now: started.date.addingTimeInterval(8 * 3_600 - 1))
        #expect(try Fixtures.sent(arrived).jobs.count == 1)
        var late = try Fixtures.event("ride-completed")
        late.envelope.time = started.adding(seconds: 8 * 3_600 + 1)
        #expect(dropReason(run.apply(late)) == .pastLifetime)
    }

    @Test func justInsideEightHoursIsSent() throws {
        var run = ActivityRun()
        _ = try run.apply("flight-boarding")
        // Landed at 17:45, processed at 17:59:59 — inside the 8 hours.
        let decision = try run.apply("flight-landed", now: Fixtures.base.addingTimeInterval(8 * 3_600 - 1))
        #expect(try Fixtures.sent(decision).jobs.first?.event == .end)
    }

    @Test func dismissalIsClampedToFourHoursAfterTheEnd() throws {
        var configuration = Fixtures.configuration
        configuration.domains = configuration.domains.map { domain in
            var domain = domain
            if domain.name == "ride" { domain.policy.statuses["completed"]?.dismissal = .after(seconds: 10 * 3_600) }
            return domain
        }
        var run = ActivityRun(translator: Translator(configuration: configuration))
        _ = try run.apply("ride-assigned")
        let send = try Fixtures.sent(try run.apply("ride-completed"))
        let aps = try #require(try JSONSerialization.jsonObject(with: send.jobs[0].payload) as? [String: Any])["aps"] as? [String: Any]
        // Ended at 10:30:00 (1795257000); 4 h later is 1795271400.
        #expect(aps?["dismissal-date"] as? Int == 1_795_271_400)
    }

    @Test func negativeDismissalBehavesAsNow() throws {
        var configuration = Fixtures.configuration
        configuration.domains = configuration.domains.map { domain in
            var domain = domain
            if domain.name == "ride" { domain.policy.statuses["completed"]?.dismissal = .after(seconds: -50) }
            return domain
        }
        var run = ActivityRun(translator: Translator(configuration: configuration))
        _ = try run.apply("ride-assigned")
        let send = try Fixtures.sent(try run.apply("ride-completed"))
        let aps = try #require(try JSONSerialization.jsonObject(with: send.jobs[0].payload) as? [String: Any])["aps"] as? [String: Any]
        #expect(aps?["dismissal-date"] as? Int == 1_795_257_000)
    }

    @Test func timestampIsTheEventTimeInUnixSeconds() throws {
        var run = ActivityRun()
        let send = try Fixtures.sent(try run.apply("ride-assigned"))
        #expect(run.snapshot?.lastPushTimestamp == 1_795_255_200)
        #expect(send.jobs[0].sequence == 1_795_255_200_120)
    }

    @Test func twoEventsInOneSecondStillOrderOnTheDevice() throws {
        var run = ActivityRun()
        _ = try run.apply("ride-assigned")
        // The cancel arrives 500 ms after the start, in the same second.
        var cancel = try Fixtures.event("ride-cancelled")
        cancel.envelope.time = EventTime(millisecondsSince1970: 1_795_255_200_620)
        let send = try Fixtures.sent(run.apply(cancel))
        let aps = try #require(try JSONSerialization.jsonObject(with: send.jobs[0].payload) as? [String: Any])["aps"] as? [String: Any]
        #expect(aps?["timestamp"] as? Int == 1_795_255_201)
        #expect(send.traceNotes.contains { $0.contains("timestamp raised") })
        // The dismissal stays relative to the true end time.
        #expect(aps?["dismissal-date"] as? Int == 1_795_255_199)
    }

    @Test func activityOfAnotherUserIsRejected() throws {
        var run = ActivityRun()
        _ = try run.apply("ride-assigned")
        run.snapshot?.userId = "someone-else"
        let decision = try run.apply("ride-eta-tick")
        guard case .deadLetter(let rejection) = decision else { Issue.record("got \(decision)"); return }
        #expect(rejection.reason == .invalidEvent)
    }

    @Test func disabledActivitiesStillApplyTheState() throws {
        var run = ActivityRun()
        run.preferences.activitiesEnabled = false
        let decision = try run.apply("ride-assigned")
        guard case .drop(let drop) = decision else { Issue.record("got \(decision)"); return }
        #expect(drop.reason == .activitiesDisabled)
        #expect(drop.newSnapshot?.lastStatus == "driverAssigned")
    }
}
