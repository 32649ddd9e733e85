import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A TCP proxy on loopback that copies bytes both ways, except that it drops one kind of
/// method frame coming from the broker: `basic.ack` (the publisher confirms) or
/// `basic.cancel-ok`, so the broker seems to have stopped answering that one thing while
/// heartbeats and every other RPC go on.
final class FrameDroppingProxy: @unchecked Sendable {
    typealias Method = (classID: UInt8, methodID: UInt8)
    static let basicAck: Method = (60, 80)
    static let basicCancelOk: Method = (60, 31)

    let port: Int
    private let listener: Int32
    private let upstreamPort: Int
    private let method: Method
    private let lock = NSLock()
    private var sockets: [Int32] = []
    private var droppedCount = 0

    /// Frames dropped so far.
    var dropped: Int { lock.withLock { droppedCount } }

    init(upstreamPort: Int, dropping method: Method) throws {
        self.upstreamPort = upstreamPort
        self.method = method
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 8) == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in acceptLoop() }.start()
    }

    func close() {
        lock.withLock {
            shutdown(listener, Int32(SHUT_RDWR))
            for socket in sockets { shutdown(socket, Int32(SHUT_RDWR)) }
        }
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: UInt16(upstreamPort))
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else {
                Glibc.close(client)
                Glibc.close(upstream)
                continue
            }
            lock.withLock { sockets += [client, upstream] }
            Thread { [self] in copy(from: client, to: upstream, filter: false) }.start()
            Thread { [self] in copy(from: upstream, to: client, filter: true) }.start()
        }
    }

    /// Copies until either side closes; from the broker (`filter`), frame by frame.
    private func copy(from source: Int32, to destination: Int32, filter: Bool) {
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        defer {
            shutdown(source, Int32(SHUT_RDWR))
            shutdown(destination, Int32(SHUT_RDWR))
        }
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return }
            pending += chunk[..<count]
            var out: [UInt8] = []
            if filter {
                // A frame: type, channel (2), size (4), payload, 0xCE.
                while pending.count >= 7 {
                    let size = pending[3..<7].reduce(0) { $0 << 8 | Int($1) }
                    guard pending.count >= 8 + size else { break }
                    let isDropped =
                        pending[0] == 1 && size >= 4 && pending[7] == 0 && pending[8] == method.classID && pending[9] == 0
                        && pending[10] == method.methodID
                    if isDropped { lock.withLock { droppedCount += 1 } } else { out += pending[..<(8 + size)] }
                    pending.removeFirst(8 + size)
                }
            } else {
                swap(&out, &pending)
            }
            var sent = 0
            while sent < out.count {
                let written = out[sent...].withUnsafeBytes { send(destination, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard written > 0 else { return }
                sent += written
            }
        }
    }
}
