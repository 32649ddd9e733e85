import LivelineCore
import Synchronization
import Testing

@testable import LivelineServices

/// A shared list the concurrent sends write to.
private final class Log: Sendable {
    let entries = Mutex<[String]>([])
    func append(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
}

@Suite struct ActivityLanesTests {
    /// Sends of one activity run in the order they entered the lane, even when their
    /// tasks start in the opposite order and an earlier one takes longer; another
    /// activity is not held up by them.
    @Test func oneActivityInOrderOthersInParallel() async {
        let lanes = ActivityLanes()
        let log = Log()
        let tickets = (0..<5).map { _ in lanes.enter(activity: "ride-1") }
        let other = lanes.enter(activity: "ride-2")
        await withTaskGroup(of: Void.self) { group in
            for step in (0..<5).reversed() {
                group.addTask {
                    await lanes.run(tickets[step]) { _ in
                        // Earlier steps sleep longer: without a lane they would finish last.
                        try? await Task.sleep(for: .milliseconds(50 - step * 10))
                        log.append("ride-1:\(step)")
                    }
                }
                // The later steps' tasks really start first.
                try? await Task.sleep(for: .milliseconds(2))
            }
            group.addTask {
                await lanes.run(other) { _ in log.append("ride-2") }
            }
        }
        let entries = log.all
        #expect(entries.filter { $0.hasPrefix("ride-1") } == (0..<5).map { "ride-1:\($0)" })
        #expect(entries.firstIndex(of: "ride-2")! < entries.firstIndex(of: "ride-1:4")!, "ride-2 did not wait for ride-1")
        #expect(lanes.activeCount == 0, "finished lanes are dropped")
    }

    @Test func aLaneThatEmptiedStartsAfresh() async {
        let lanes = ActivityLanes()
        let log = Log()
        await lanes.run(lanes.enter(activity: "ride-1")) { _ in log.append("first") }
        #expect(lanes.activeCount == 0)
        await lanes.run(lanes.enter(activity: "ride-1")) { _ in log.append("second") }
        #expect(log.all == ["first", "second"])
    }

    @Test func jobsWithoutAnActivityRunAtOnce() async {
        let lanes = ActivityLanes()
        let log = Log()
        await lanes.run(lanes.enter(activity: nil)) { _ in log.append("ran") }
        #expect(log.all == ["ran"])
        #expect(lanes.activeCount == 0)
    }

    /// A backlog: an update whose turn comes while a newer job for the same target waits
    /// behind it is superseded, by an update or an end. Another target's jobs and older jobs
    /// that arrive late supersede nothing, and an end is never superseded.
    @Test func anUpdateWithANewerJobForItsTargetBehindItIsSuperseded() async {
        let lanes = ActivityLanes()
        let log = Log()
        let phone = PushTarget.device(token: "aa", kind: .update)
        let tablet = PushTarget.device(token: "bb", kind: .update)
        let jobs = [
            makeJob(target: phone, activityID: "ride-1", priority: .low, sequence: 1),
            makeJob(target: phone, activityID: "ride-1", priority: .low, sequence: 2),
            makeJob(target: tablet, activityID: "ride-1", priority: .low, sequence: 2),
            makeJob(target: phone, activityID: "ride-1", priority: .low, sequence: 3),
            makeJob(target: phone, activityID: "ride-1", priority: .low, sequence: 0),
            makeJob(target: tablet, activityID: "ride-1", event: .end, sequence: 4, isTerminal: true),
            makeJob(target: phone, activityID: "ride-1", event: .end, sequence: 1, isTerminal: true),
        ]
        let tickets = jobs.map { job in
            let ticket = lanes.enter(activity: "ride-1")
            lanes.note(ticket, job: job)
            return ticket
        }
        for (index, ticket) in tickets.enumerated() {
            await lanes.run(ticket) { overtaken in log.append("\(index):\(overtaken == .queued)") }
        }
        #expect(log.all == ["0:true", "1:true", "2:true", "3:false", "4:true", "5:false", "6:false"])
        #expect(lanes.activeCount == 0)
    }

    /// A goal queued behind clock ticks, ticks behind it: the ticks before it are superseded,
    /// the goal (an alert at priority 10) is not, and neither is a priority-10 update without an
    /// alert, nor an alert at priority 5.
    @Test func anUpdateAPersonWouldNoticeIsNeverSuperseded() async {
        let lanes = ActivityLanes()
        let log = Log()
        let fan = PushTarget.device(token: "aa", kind: .update)
        let jobs = [
            makeJob(target: fan, activityID: "g-1", priority: .low, sequence: 1),
            makeJob(target: fan, activityID: "g-1", priority: .high, sequence: 2, alerts: true),
            makeJob(target: fan, activityID: "g-1", priority: .low, sequence: 3),
            makeJob(target: fan, activityID: "g-1", priority: .high, sequence: 4),
            makeJob(target: fan, activityID: "g-1", priority: .low, sequence: 5, alerts: true),
            makeJob(target: fan, activityID: "g-1", priority: .low, sequence: 6),
        ]
        let tickets = jobs.map { job in
            let ticket = lanes.enter(activity: "g-1")
            lanes.note(ticket, job: job)
            return ticket
        }
        for (index, ticket) in tickets.enumerated() {
            await lanes.run(ticket) { overtaken in log.append("\(index):\(overtaken == .queued)") }
        }
        #expect(log.all == ["0:true", "1:false", "2:true", "3:false", "4:false", "5:false"])
    }

    /// A job that reaches the sender after a newer one of its lane had its turn (a copy a
    /// cut-off translator published lands when the cut heals) is told so, an alert too (the
    /// device would ignore its older timestamp); the same job again, another lane's, an end
    /// and an alert on-call replayed are not.
    @Test func anUpdateOlderThanOneThatWentBeforeItIsOvertaken() async {
        let lanes = ActivityLanes()
        let log = Log()
        let phone = PushTarget.device(token: "aa", kind: .update)
        let jobs = [
            ("ride-1/aa", makeJob(target: phone, activityID: "ride-1", priority: .low, sequence: 5)),
            ("ride-1/aa", makeJob(target: phone, activityID: "ride-1", priority: .low, sequence: 3)),
            ("ride-1/aa", makeJob(target: phone, activityID: "ride-1", priority: .low, sequence: 5)),
            ("ride-2/aa", makeJob(target: phone, activityID: "ride-2", priority: .low, sequence: 1)),
            ("ride-1/aa", makeJob(target: phone, activityID: "ride-1", event: .end, sequence: 4, isTerminal: true)),
            // An alert that a translator cut off from the broker published late.
            ("ride-1/aa", makeJob(target: phone, activityID: "ride-1", priority: .high, sequence: 4, alerts: true)),
            // An alert replayed from the dead-letter queue keeps its sequence: it goes out.
            ("ride-1/aa", makeJob(target: phone, activityID: "ride-1", priority: .high, sequence: 2, alerts: true)),
        ]
        for (index, (lane, job)) in jobs.enumerated() {
            // One at a time: nothing is queued behind any of them.
            await lanes.run(lanes.enter(activity: lane), job: job, replayed: index == 6) { overtaken in
                log.append("\(index):\(String(describing: overtaken))")
            }
        }
        let sent = "Optional(LivelineServices.Overtaking.sent)"
        #expect(log.all == ["0:nil", "1:\(sent)", "2:nil", "3:nil", "4:nil", "5:\(sent)", "6:nil"])
    }
}

@Suite struct NewestSentTests {
    /// Two generations of `capacity` lanes: a lane is remembered until a full generation of
    /// others came after it.
    @Test func rememberedForTwoGenerations() {
        let newest = NewestSent(capacity: 2)
        let target = PushTarget.device(token: "aa", kind: .update)
        func update(_ sequence: Int64) -> PushJob { makeJob(target: target, activityID: "r", priority: .low, sequence: sequence) }
        for lane in 1...3 { #expect(!newest.isOvertaken(update(10), lane: lane)) }
        #expect(newest.isOvertaken(update(9), lane: 1), "lane 1 is in the older generation")
        #expect(!newest.isOvertaken(update(10), lane: 4))
        #expect(!newest.isOvertaken(update(10), lane: 5))
        #expect(!newest.isOvertaken(update(9), lane: 1), "two generations later lane 1 is forgotten")
        #expect(newest.count <= 4)
    }

    /// A generation's storage is the one reserved when it started: filling it, and starting the
    /// next, never grows a table (which would hold the old one and a copy twice its size).
    @Test func eachGenerationFillsTheStorageItReserved() {
        let newest = NewestSent(capacity: 96)  // three quarters of 128 buckets
        #expect(newest.storage.current == 96)
        let target = PushTarget.device(token: "aa", kind: .update)
        let job = makeJob(target: target, activityID: "r", priority: .low, sequence: 1)
        for lane in 0..<96 { _ = newest.isOvertaken(job, lane: lane) }
        #expect(newest.count == 96)
        #expect(newest.storage.current == 96, "the first generation filled without growing")
        for lane in 96..<(96 * 2 + 10) { _ = newest.isOvertaken(job, lane: lane) }
        #expect(newest.storage == (current: 96, previous: 96), "two generations on, each as reserved")
        #expect(newest.count == 96 + 10)
    }
}
