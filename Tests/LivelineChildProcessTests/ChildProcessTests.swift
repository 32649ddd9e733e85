#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LivelineChildProcess
import Testing

/// The fault suite and the benchmarks stop their workers with these, so a child's end must
/// always be seen, with the right status, and nothing of the parent may leak into it.
@Suite struct ChildProcessTests {
    @Test("exit statuses: the child's code, or 128 + the signal that ended it")
    func exitStatuses() async throws {
        #expect(try await ChildProcess.run("/bin/sh", arguments: ["-c", "exit 3"]) == 3)
        let sleeper = try ChildProcess.start("/bin/sleep", arguments: ["30"])
        #expect(sleeper.isRunning)
        sleeper.signal(SIGKILL)
        #expect(await sleeper.exited() == 128 + SIGKILL)
        #expect(!sleeper.isRunning && sleeper.exitStatus == 128 + SIGKILL)
    }

    @Test("a child that ignores SIGTERM is killed after the grace period, and says so")
    func terminateEscalates() async throws {
        let stubborn = try ChildProcess.start("/bin/sh", arguments: ["-c", "trap '' TERM; exec sleep 30"])
        try await Task.sleep(for: .milliseconds(300))  // Until the trap is set.
        #expect(await stubborn.terminate(grace: .milliseconds(300)) == false)
        #expect(stubborn.exitStatus == 128 + SIGKILL)

        let willing = try ChildProcess.start("/bin/sleep", arguments: ["30"])
        #expect(await willing.terminate(grace: .seconds(30)) == true)
        #expect(willing.exitStatus == 128 + SIGTERM)
    }

    /// The store outage's hang: a daemon started through a child kept descriptors the
    /// parent relied on. The child now gets none above standard error.
    @Test("only standard input, output and error reach the child")
    func descriptorsAreNotInherited() async throws {
        let inheritable = open("/dev/null", O_RDONLY)  // No O_CLOEXEC: posix_spawn would pass it on.
        try #require(inheritable > STDERR_FILENO)
        defer { close(inheritable) }
        let status = try await ChildProcess.run("/bin/sh", arguments: ["-c", "test ! -e /proc/self/fd/\(inheritable)"])
        #expect(status == 0, "descriptor \(inheritable) reached the child")
    }

    @Test("environment and output: the child sees exactly the environment given, and its output is appended to the file")
    func environmentAndOutput() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: file) }
        try "before\n".write(to: file, atomically: true, encoding: .utf8)
        let status = try await ChildProcess.start(
            "/bin/sh", arguments: ["-c", "echo \"$GREETING\"; echo \"${HOME:-unset}\" >&2"], environment: ["GREETING": "hello"],
            output: file.path
        ).exited()
        #expect(status == 0)
        #expect(try String(contentsOf: file, encoding: .utf8) == "before\nhello\nunset\n")
    }

    @Test("a program that cannot be started is a clear error")
    func spawnFailure() throws {
        #expect(throws: ChildProcess.SpawnError.self) {
            try ChildProcess.start("/nonexistent/program", arguments: [])
        }
    }
}
