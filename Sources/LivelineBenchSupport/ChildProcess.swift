#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation

/// Runs a program to its end without Foundation's `Process` and without blocking the
/// concurrency pool: `posix_spawn`, then `waitpid` on a thread that exists for it.
/// (`Process.waitUntilExit` was seen never to return for a script that started a daemon,
/// `pg_ctl start`, leaving the script a zombie.)
public enum ChildProcess {
    public struct SpawnError: Error, CustomStringConvertible {
        public let path: String
        public let code: Int32
        public var description: String { "could not start \(path): \(String(cString: strerror(code)))" }
    }

    /// Runs `path` with `arguments`, inheriting the environment and standard streams, and
    /// returns its exit status (128 + the signal when a signal ended it).
    public static func run(_ path: String, arguments: [String]) async throws -> Int32 {
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let code = posix_spawn(&pid, path, nil, nil, argv, environ)
        guard code == 0 else { throw SpawnError(path: path, code: code) }
        let child = pid
        return await withCheckedContinuation { continuation in
            let waiter = Thread {
                var status: Int32 = 0
                while waitpid(child, &status, 0) == -1, errno == EINTR {}
                let exited = status & 0x7f == 0
                continuation.resume(returning: exited ? (status >> 8) & 0xff : 128 + (status & 0x7f))
            }
            waiter.start()
        }
    }
}
