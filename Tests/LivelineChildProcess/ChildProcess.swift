#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import Synchronization

/// A child process started with `posix_spawn` and reaped by a thread that exists for it,
/// so its end is always seen and waiting never blocks the concurrency pool.
///
/// Foundation's `Process` is not used for children: it learns of a child's end through a
/// socket the child inherits, and `waitUntilExit` spins on a run loop until then. Twice a
/// parent waited forever on a child that had long exited (a zombie): once for a script
/// that started a daemon (`pg_ctl start`), once for a `liveline sender` after SIGTERM in
/// the fault suite's store outage, which timed CI out.
///
/// The child gets only standard input, output and error: every other descriptor is closed
/// in it, so a daemon it starts holds none of this process's sockets. Its signals start at
/// their defaults, unblocked.
public final class ChildProcess: Sendable {
    public struct SpawnError: Error, CustomStringConvertible {
        public let path: String
        public let code: Int32
        public var description: String { "could not start \(path): \(String(cString: strerror(code)))" }
    }

    public let pid: pid_t
    private let state = Mutex<(status: Int32?, waiters: [CheckedContinuation<Int32, Never>])>((nil, []))

    private init(pid: pid_t) { self.pid = pid }

    /// Starts `path` with `arguments`. `environment` replaces this process's when given;
    /// `output` names a file that standard output and error are appended to (created when
    /// missing), otherwise both are inherited; `errorOutput` takes standard error apart.
    public static func start(
        _ path: String, arguments: [String], environment: [String: String]? = nil, output: String? = nil,
        errorOutput: String? = nil
    ) throws -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let output {
            posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output, O_WRONLY | O_CREAT | O_APPEND, 0o644)
            posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO)
        }
        if let errorOutput {
            posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, errorOutput, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        }
        try closeInheritedDescriptors(&actions, path: path)
        // Every signal at its default and none blocked: a parent that ignores or blocks
        // SIGTERM (to take it through a dispatch source) would pass that on, and its child
        // would never stop.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var all = sigset_t(), none = sigset_t()
        sigfillset(&all)
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { envp?.forEach { free($0) } }

        var pid: pid_t = 0
        let code = envp.map { posix_spawn(&pid, path, &actions, &attributes, argv, $0) }
            ?? posix_spawn(&pid, path, &actions, &attributes, argv, environ)
        guard code == 0 else { throw SpawnError(path: path, code: code) }

        let child = ChildProcess(pid: pid)
        Thread { child.reap() }.start()
        return child
    }

    /// Runs `path` to its end, inheriting the environment and standard streams, and returns
    /// its exit status.
    public static func run(_ path: String, arguments: [String]) async throws -> Int32 {
        try await start(path, arguments: arguments).exited()
    }

    /// The exit status once the child has ended (128 + the signal when a signal ended it).
    public var exitStatus: Int32? { state.withLock { $0.status } }

    public var isRunning: Bool { exitStatus == nil }

    /// Waits for the child's end and returns its exit status.
    public func exited() async -> Int32 {
        await withCheckedContinuation { continuation in
            let status = state.withLock { state -> Int32? in
                if state.status == nil { state.waiters.append(continuation) }
                return state.status
            }
            if let status { continuation.resume(returning: status) }
        }
    }

    /// Sends `signal` unless the child has been reaped (its pid may then be another's).
    public func signal(_ signal: Int32) {
        state.withLock { state in
            if state.status == nil { _ = kill(pid, signal) }
        }
    }

    /// SIGTERM, then SIGKILL if the child has not ended within `grace`. Returns whether it
    /// ended by itself.
    public func terminate(grace: Duration) async -> Bool {
        signal(SIGTERM)
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask { _ = await self.exited(); return true }
            group.addTask {
                try? await Task.sleep(for: grace)
                return false
            }
            let endedByItself = await group.next() ?? true
            if !endedByItself {
                signal(SIGKILL)
                _ = await exited()
            }
            group.cancelAll()
            return endedByItself
        }
    }

    /// Runs on the child's own thread: blocks in `waitpid` until the child ends.
    private func reap() {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1, errno == EINTR {}
        let exited = status & 0x7f == 0
        let code = exited ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let waiters = state.withLock { state in
            state.status = code
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: code) }
    }

    /// Closes every descriptor above standard error in the child: with glibc's
    /// `posix_spawn_file_actions_addclosefrom_np` (2.34+; Swift's Glibc module does not
    /// export it), else one close per descriptor open now.
    private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t, path: String) throws {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") {
            let code = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, STDERR_FILENO + 1)
            guard code == 0 else { throw SpawnError(path: path, code: code) }
            return
        }
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for descriptor in open.compactMap(Int32.init) where descriptor > STDERR_FILENO {
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }
    }
}
