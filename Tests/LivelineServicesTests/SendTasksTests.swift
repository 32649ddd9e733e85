import Synchronization
import Testing

@testable import LivelineServices

/// The sender's long-lived send tasks: every job runs once, never more than `limit` at once, on
/// at most `limit` tasks; the consumer loop waits while all are busy; finishing ends them all.
@Suite("Send tasks")
struct SendTasksTests {
    private final class Tally: Sendable {
        private struct Counts {
            var running = 0
            var most = 0
            var done: [Int] = []
        }

        private let counts = Mutex(Counts())

        func start() { counts.withLock { $0.running += 1; $0.most = max($0.most, $0.running) } }
        func end(_ number: Int) { counts.withLock { $0.running -= 1; $0.done.append(number) } }
        var most: Int { counts.withLock { $0.most } }
        var done: [Int] { counts.withLock { $0.done } }
    }

    private final class Log: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    @Test("500 jobs through 8 tasks: each runs once, never more than 8 at once, on 8 tasks")
    func everyJobRunsOnceWithinTheLimit() async {
        let tasks = SendTasks(limit: 8)
        let tally = Tally()
        let started = Mutex(0)
        await withTaskGroup(of: Void.self) { group in
            for number in 0..<500 {
                let job: SendTasks.Job = {
                    tally.start()
                    if number < 8 {
                        // The first eight hold their tasks until all eight run: the limit is reached.
                        let deadline = ContinuousClock.now + .seconds(10)
                        while tally.most < 8, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(1)) }
                    } else if number % 3 == 0 {
                        await Task.yield()
                    }
                    tally.end(number)
                }
                if let first = await tasks.submit(job) {
                    started.withLock { $0 += 1 }
                    group.addTask { await tasks.run(first: first) }
                }
            }
            tasks.finish()
            await group.waitForAll()
        }
        #expect(tally.done.sorted() == Array(0..<500))
        #expect(tally.most == 8)
        #expect(started.withLock { $0 } == 8, "a task is started only while fewer than the limit exist")
    }

    @Test("with every task busy, the consumer loop waits until one finishes, which takes the waiting job")
    func theLoopWaitsWhileEveryTaskIsBusy() async throws {
        let tasks = SendTasks(limit: 1)
        let gate = AsyncStream<Void>.makeStream()
        let order = Log()
        await withTaskGroup(of: Void.self) { group in
            let first = await tasks.submit {
                for await _ in gate.stream { break }
                order.append("first done")
            }
            group.addTask { await tasks.run(first: first!) }
            group.addTask {
                try? await Task.sleep(for: .milliseconds(50))
                order.append("gate opened")
                gate.continuation.yield()
            }
            let second = await tasks.submit { order.append("second ran") }
            order.append("second handed over")
            #expect(second == nil, "no second task beyond the limit")
            tasks.finish()
            await group.waitForAll()
        }
        let seen = order.all
        #expect(seen.prefix(2) == ["gate opened", "first done"])
        #expect(Set(seen.dropFirst(2)) == ["second ran", "second handed over"])
    }

    @Test("finishing ends idle tasks at once and busy ones after their job")
    func finishEndsEveryTask() async {
        let tasks = SendTasks(limit: 4)
        let ran = Tally()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<3 {
                if let first = await tasks.submit({ ran.start(); ran.end(0) }) {
                    group.addTask { await tasks.run(first: first) }
                }
            }
            try? await Task.sleep(for: .milliseconds(20))
            tasks.finish()
            await group.waitForAll()
        }
        #expect(ran.done.count == 3)
    }
}
