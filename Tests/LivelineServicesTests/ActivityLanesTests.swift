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
    /// Sends of one activity finish in the order they were submitted, even when an earlier
    /// one takes longer; another activity is not held up by them.
    @Test func oneActivityInOrderOthersInParallel() async {
        let lanes = ActivityLanes()
        let log = Log()
        await withTaskGroup(of: Void.self) { group in
            for step in 0..<5 {
                group.addTask {
                    await lanes.run(activity: "ride-1") {
                        // Earlier steps sleep longer: without a lane they would finish last.
                        try? await Task.sleep(for: .milliseconds(50 - step * 10))
                        log.append("ride-1:\(step)")
                    }
                }
                // Submission order is what the lane keeps, so submit one at a time.
                try? await Task.sleep(for: .milliseconds(2))
            }
            group.addTask {
                await lanes.run(activity: "ride-2") { log.append("ride-2") }
            }
        }
        let entries = log.all
        #expect(entries.filter { $0.hasPrefix("ride-1") } == (0..<5).map { "ride-1:\($0)" })
        #expect(entries.firstIndex(of: "ride-2")! < entries.firstIndex(of: "ride-1:4")!, "ride-2 did not wait for ride-1")
        #expect(lanes.activeCount == 0, "finished lanes are dropped")
    }

    @Test func jobsWithoutAnActivityRunAtOnce() async {
        let lanes = ActivityLanes()
        let log = Log()
        await lanes.run(activity: nil) { log.append("ran") }
        #expect(log.all == ["ran"])
        #expect(lanes.activeCount == 0)
    }
}
