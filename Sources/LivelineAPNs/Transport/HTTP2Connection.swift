import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

// Tests: Tests/LivelineAPNsTests/ConnectionTests.swift

/// One long-lived HTTP/2 connection to an endpoint. Requests are multiplexed on it as streams.
///
/// Requests are written as HTTP/2 frames by one connection-level handler (``APNsConnectionHandler``),
/// not through a child channel per stream: a child channel (pipeline, handler, promises) per push
/// cost more CPU than everything else on the hot path together.
final class HTTP2Connection: Sendable {
    typealias ResponseContinuation = CheckedContinuation<HTTP2Response, any Error>

    private struct Submissions {
        var queue: [(HTTP2Request, ResponseContinuation)] = []
        var drainScheduled = false
    }

    let id: Int
    let channel: any Channel
    private let handler: NIOLoopBound<APNsConnectionHandler>
    private let submissions = NIOLockedValueBox(Submissions())

    fileprivate init(id: Int, channel: any Channel, handler: NIOLoopBound<APNsConnectionHandler>) {
        self.id = id
        self.channel = channel
        self.handler = handler
    }

    /// Sends the request on a new stream and returns the complete response.
    func execute(_ request: HTTP2Request) async throws -> HTTP2Response {
        try await withCheckedThrowingContinuation { continuation in
            // Submissions from many tasks are queued and handed to the event loop in one task, so a
            // burst of pushes costs one loop wake-up, one flush and so one TLS record and write(2).
            let scheduleDrain = submissions.withLockedValue { submissions -> Bool in
                submissions.queue.append((request, continuation))
                if submissions.drainScheduled { return false }
                submissions.drainScheduled = true
                return true
            }
            if scheduleDrain {
                let handler = self.handler
                let submissions = self.submissions
                channel.eventLoop.execute {
                    let batch = submissions.withLockedValue { submissions in
                        defer {
                            submissions.queue.removeAll(keepingCapacity: true)
                            submissions.drainScheduled = false
                        }
                        return submissions.queue
                    }
                    handler.value.submit(batch)
                }
            }
        }
    }

    func close() {
        channel.close(promise: nil)
    }

    /// Connects, performs the TLS handshake (offering only `h2`) and installs the HTTP/2 pipeline.
    ///
    /// The connection reports itself to `pool` once the server's first SETTINGS frame arrives; before
    /// that it cannot know how many streams it may open.
    static func connect(
        id: Int,
        endpoint: APNsEndpoint,
        sslContext: NIOSSLContext?,
        group: any EventLoopGroup,
        configuration: APNsConnectionPoolConfiguration,
        pool: HTTP2ConnectionPool
    ) -> EventLoopFuture<any Channel> {
        let serverHostname = isIPAddress(endpoint.host) ? nil : endpoint.host
        return ClientBootstrap(group: group)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(TimeAmount(configuration.connectTimeout))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    if let sslContext {
                        try sync.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: serverHostname))
                    }
                    let handler = APNsConnectionHandler(pool: pool, configuration: configuration)
                    let connection = HTTP2Connection(
                        id: id,
                        channel: channel,
                        handler: NIOLoopBound(handler, eventLoop: channel.eventLoop)
                    )
                    handler.connection = connection
                    try sync.addHandler(handler)
                }
            }
            .connect(host: endpoint.host, port: endpoint.port)
    }

    static func isIPAddress(_ host: String) -> Bool {
        (try? SocketAddress(ipAddress: host, port: 0)) != nil
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
