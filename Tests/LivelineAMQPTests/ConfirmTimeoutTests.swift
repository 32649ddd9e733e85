import Foundation
import LivelineAMQP
import LivelineTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A broker that answers everything but never confirms, against the real RabbitMQ: a proxy in
/// front of it passes every frame except the broker's `basic.ack`, so heartbeats and RPCs work
/// and publisher confirms never arrive.
@Suite(.timeLimit(.minutes(2)))
struct ConfirmTimeoutTests {
    @Test func aPublishTheBrokerNeverConfirmsIsSentAgainOnTheNextBroker() async throws {
        try await withBroker {
            let real = try AMQPConfiguration(url: Broker.url)
            let proxy = try ConfirmSwallowingProxy(upstreamPort: real.port)
            defer { proxy.close() }
            var configuration = try Broker.configuration(heartbeat: .seconds(2))
            configuration.brokers = [.init(host: "127.0.0.1", port: proxy.port), real.brokers[0]]
            configuration.confirmTimeout = .seconds(2)
            let connection = try await AMQPConnection.connect(configuration, logger: Broker.logger)
            let queue = Broker.unique("unconfirmed")
            try await connection.declare(AMQPTopology(queues: [.init(queue, arguments: quorum)]))
            #expect(proxy.swallowedConfirms == 0, "declaring needs no confirm")

            let started = ContinuousClock.now
            // Without the timeout the publish would wait for ever: closing the connection
            // after 20 s fails it instead, and the test with it.
            let deadline = Task {
                try await Task.sleep(for: .seconds(20))
                await connection.close()
            }
            try await connection.publish(message("confirmed the second time", to: queue))
            deadline.cancel()
            let waited = ContinuousClock.now - started

            #expect(proxy.swallowedConfirms >= 1, "the broker confirmed the first copy; the proxy kept it back")
            #expect(waited >= .seconds(2), "published after \(waited): sooner than the confirm timeout")
            #expect(waited < .seconds(10), "published after \(waited)")
            #expect(connection.reconnectCount == 1)
            // The broker kept the first copy and the resend: at least once, as documented.
            #expect(try await connection.messageCount(queue: queue) == 2)
            try await connection.delete(queue: queue)
            await connection.close()
        }
    }
}

/// A TCP proxy on loopback that copies bytes both ways, except that it drops the method
/// frames `basic.ack` (class 60, method 80) coming from the broker: the publisher confirms.
private final class ConfirmSwallowingProxy: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let upstreamPort: Int
    private let lock = NSLock()
    private var sockets: [Int32] = []
    private var swallowed = 0

    var swallowedConfirms: Int { lock.withLock { swallowed } }

    init(upstreamPort: Int) throws {
        self.upstreamPort = upstreamPort
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
            Thread { [self] in copy(from: client, to: upstream, dropConfirms: false) }.start()
            Thread { [self] in copy(from: upstream, to: client, dropConfirms: true) }.start()
        }
    }

    /// Copies until either side closes; from the broker, frame by frame.
    private func copy(from source: Int32, to destination: Int32, dropConfirms: Bool) {
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
            if dropConfirms {
                // A frame: type, channel (2), size (4), payload, 0xCE.
                while pending.count >= 7 {
                    let size = pending[3..<7].reduce(0) { $0 << 8 | Int($1) }
                    guard pending.count >= 8 + size else { break }
                    let isConfirm =
                        pending[0] == 1 && size >= 4 && pending[7] == 0 && pending[8] == 60 && pending[9] == 0
                        && pending[10] == 80
                    if isConfirm { lock.withLock { swallowed += 1 } } else { out += pending[..<(8 + size)] }
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
