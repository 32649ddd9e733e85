import Foundation
import Glibc

// Tests: scripts/bench-smoke

/// Ports on 127.0.0.1 for the processes a benchmark starts.
enum LoopbackPort {
    /// A port nothing listens on now: the kernel's choice for a socket bound to port 0.
    static func free() throws -> Int {
        guard let port = try bind(0) else { throw BenchError("bind() to a free loopback port: errno \(errno)") }
        return port
    }

    /// The first port from `start` that nothing holds. A worker's ops port is counted up from
    /// a fixed base, outside the kernel's range for outgoing connections; a process left over
    /// from another run may still hold one, and its `/readyz` and `/metrics` would then answer
    /// for the new worker, which cannot bind.
    static func free(from start: Int) throws -> Int {
        for port in start..<min(start + 100, 65_536) where try bind(port) != nil { return port }
        throw BenchError("no free loopback port in \(start)...\(start + 99)")
    }

    /// The port a socket bound to 127.0.0.1:`port` got (the kernel's choice for 0); nil when
    /// the port is taken.
    private static func bind(_ port: Int) throws -> Int? {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw BenchError("socket(): errno \(errno)") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                Glibc.bind(socket, address, length) == 0 && getsockname(socket, address, &length) == 0
            }
        }
        return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }
}
