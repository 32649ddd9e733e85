import LivelineHTTP2
import NIOCore
import NIOHPACK

// Tests: Tests/LivelineAPNsTests/ConnectionTests.swift, Tests/LivelineAPNsTests/NGHTTP2InteropTests.swift, Tests/LivelineAPNsTests/ReferenceServerTests.swift

/// Runs one HTTP/2 connection (RFC 9113) on the bytes under TLS, as the client of an
/// ``HTTP2Session``: the session enforces the protocol (stream states, flow control both ways,
/// SETTINGS and their timeout, flood limits) and this handler maps its events to requests: answers
/// to the requests in flight by stream id, the server's SETTINGS to the pool (how many streams we
/// may open), GOAWAY to a drain, and it runs what is the client's alone: PING health checks and the
/// request timeout sweep. See ``HTTP2Wire`` for why this is not NIO's handler.
final class APNsConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private struct InFlight {
        var continuation: HTTP2Connection.ResponseContinuation
        var deadline: NIODeadline
        var status: Int?
        var headers = HPACKHeaders()
        var body: ByteBuffer?

        mutating func append(_ data: inout ByteBuffer) {
            if body == nil {
                body = data
            } else {
                body!.writeBuffer(&data)
            }
        }
    }

    /// Set right after creation; cleared when the handler goes, to break the reference cycle.
    var connection: HTTP2Connection?
    private let pool: HTTP2ConnectionPool
    private let configuration: APNsConnectionPoolConfiguration
    private var context: ChannelHandlerContext?
    private var inFlight: [UInt32: InFlight] = [:]
    private var isReady = false
    private var isClosed = false
    /// Why the channel failed (a TLS handshake error, a reset), for the pool's log.
    private var failure: (any Error)?
    private var prefaceSent = false
    /// Frames written go out together at the end of a submission or a read burst.
    private var session = HTTP2Session(role: .client)
    private var pingTask: RepeatedTask?
    private var sweepTask: RepeatedTask?
    private var pingTimeout: Scheduled<Void>?
    private var readyTimeout: Scheduled<Void>?
    private var pingCounter: UInt64 = 0

    init(pool: HTTP2ConnectionPool, configuration: APNsConnectionPoolConfiguration) {
        self.pool = pool
        self.configuration = configuration
    }

    // MARK: Lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let channel = context.channel
        // TLS handshake and the first SETTINGS must arrive in time, or the connection is useless.
        readyTimeout = context.eventLoop.scheduleTask(in: TimeAmount(configuration.connectTimeout)) {
            channel.close(promise: nil)
        }
        let loopBoundSelf = NIOLoopBound(self, eventLoop: context.eventLoop)
        let interval = TimeAmount(configuration.pingInterval)
        pingTask = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            loopBoundSelf.value.sendPing()
        }
        // One sweep for request timeouts instead of a timer per request.
        let timeout = TimeAmount(configuration.requestTimeout)
        let sweep: TimeAmount = .nanoseconds(max(20_000_000, min(1_000_000_000, timeout.nanoseconds / 4)))
        sweepTask = context.eventLoop.scheduleRepeatedTask(initialDelay: sweep, delay: sweep) { _ in
            loopBoundSelf.value.expireRequests()
        }
        if context.channel.isActive { sendPreface() }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelTimers()
        self.context = nil
        connection = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        sendPreface()
        context.fireChannelActive()
    }

    /// The client's connection preface. (TLS holds it back until the handshake is done.)
    private func sendPreface() {
        guard !prefaceSent else { return }
        prefaceSent = true
        session.start(now: .now())
        flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        isClosed = true
        cancelTimers()
        let lost = inFlight
        inFlight.removeAll()
        for (streamID, request) in lost {
            request.continuation.resume(throwing: failure(for: streamID, resetCode: nil))
        }
        if let connection {
            pool.connectionClosed(connection.id, wasReady: isReady, error: failure)
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // TLS or socket errors end the connection; channelInactive fails what was in flight.
        if failure == nil { failure = error }
        context.close(promise: nil)
    }

    // MARK: Requests

    /// Writes a batch of requests, one new stream each, with a single flush.
    func submit(_ batch: [(HTTP2Request, HTTP2Connection.ResponseContinuation)]) {
        guard context != nil, !isClosed, session.peerGoAwayLastStreamID == nil else {
            for (_, continuation) in batch {
                continuation.resume(throwing: HTTP2TransportFailure.unprocessed("connection no longer accepts streams"))
            }
            return
        }
        let deadline = NIODeadline.now() + TimeAmount(configuration.requestTimeout)
        for (request, continuation) in batch {
            do {
                let streamID = try session.sendRequest(request.headers, body: request.body)
                inFlight[streamID] = InFlight(continuation: continuation, deadline: deadline)
            } catch {
                // Nothing was written for this request.
                continuation.resume(throwing: HTTP2TransportFailure.unprocessed("HTTP/2: \(error)"))
            }
        }
        flush()
        if session.nextLocalStreamID > UInt32(Int32.max - 1_000) {
            // Stream ids are finite; retire the connection long before they run out.
            pool.connectionGoingAway(connection?.id ?? -1)
        }
    }

    private func complete(_ streamID: UInt32) {
        // The server may answer before it read the whole body (an early 413): the session then
        // stops sending the rest and resets the stream.
        guard let request = inFlight.removeValue(forKey: streamID) else { return }
        guard let status = request.status else {
            request.continuation.resume(throwing: HTTP2TransportFailure.interrupted("response without :status"))
            return
        }
        request.continuation.resume(returning: HTTP2Response(status: status, headers: request.headers, body: request.body))
    }

    private func fail(_ streamID: UInt32, resetCode: HTTP2Wire.ErrorCode?) {
        guard let request = inFlight.removeValue(forKey: streamID) else { return }
        request.continuation.resume(throwing: failure(for: streamID, resetCode: resetCode))
    }

    /// Whether a lost stream can safely be sent again: only if the server provably did not process it.
    private func failure(for streamID: UInt32, resetCode: HTTP2Wire.ErrorCode?) -> HTTP2TransportFailure {
        if let last = session.peerGoAwayLastStreamID, streamID > last {
            return .unprocessed("stream above GOAWAY last-stream-id")
        }
        if resetCode == .refusedStream {
            return .unprocessed("stream refused by server")
        }
        return .interrupted(resetCode.map { "stream reset (\($0))" } ?? "connection closed mid-flight")
    }

    private func expireRequests() {
        let now = NIODeadline.now()
        // The sweep also runs the session's clock: SETTINGS unacknowledged for too long end it.
        if let event = session.checkTimeouts(now: now) { handle(event) }
        let expired = inFlight.filter { $0.value.deadline <= now }.map(\.key)
        for streamID in expired {
            if let request = inFlight.removeValue(forKey: streamID) {
                request.continuation.resume(throwing: HTTP2TransportFailure.interrupted("no response in time"))
            }
            session.resetStream(streamID, code: .cancel)
        }
        flush()
    }

    // MARK: Inbound frames

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !isClosed else { return }
        session.receive(unwrapInboundIn(data))
        let now = NIODeadline.now()
        while !isClosed, let event = session.nextEvent(now: now) {
            handle(event)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flush()
        context.fireChannelReadComplete()
    }

    private func handle(_ event: HTTP2Session.Event) {
        switch event {
        case .settings(let settings):
            receiveSettings(settings)
        case .headers(let streamID, let headers, let endStream):
            // The stream's entry is found once and changed in place: each `inFlight[streamID]?.x`
            // hashed the id and moved the entry out and back (3 % of the sender, by instructions).
            if let index = inFlight.index(forKey: streamID), inFlight.values[index].status == nil,
                let raw = headers.first(name: ":status"), let code = Int(raw), code >= 200
            {
                // 1xx heads are skipped; the final head follows.
                if endStream {
                    let request = inFlight.remove(at: index).value
                    request.continuation.resume(returning: HTTP2Response(status: code, headers: headers, body: request.body))
                    return
                }
                inFlight.values[index].status = code
                inFlight.values[index].headers = headers
            }
            if endStream { complete(streamID) }
        case .data(let streamID, var data, let endStream):
            if data.readableBytes > 0, let index = inFlight.index(forKey: streamID) { inFlight.values[index].append(&data) }
            if endStream { complete(streamID) }
        case .streamReset(let streamID, let code), .streamError(let streamID, let code):
            fail(streamID, resetCode: code)
        case .goAway(let lastStreamID, _):
            receiveGoAway(lastStreamID: lastStreamID)
        case .pingAcknowledged:
            pingTimeout?.cancel()
            pingTimeout = nil
        case .connectionError:
            // GOAWAY is in the output; channelInactive fails what was in flight.
            closeAfterError()
        }
    }

    private func receiveSettings(_ settings: HTTP2Session.PeerSettings) {
        let advertisedStreams = settings.maximumConcurrentStreams
        guard let connection else { return }
        if !isReady {
            isReady = true
            readyTimeout?.cancel()
            readyTimeout = nil
            // No limit advertised means "unlimited" in HTTP/2; our own cap applies.
            pool.connectionReady(connection, maximumStreams: min(advertisedStreams ?? Int.max, configuration.maximumStreamsPerConnection))
        } else if let advertisedStreams {
            pool.connection(connection.id, maximumStreamsChanged: min(advertisedStreams, configuration.maximumStreamsPerConnection))
        }
    }

    private func receiveGoAway(lastStreamID: UInt32) {
        // Streams above last-stream-id were not processed: hand them back for another connection.
        let unprocessed = inFlight.keys.filter { $0 > lastStreamID }
        for streamID in unprocessed {
            fail(streamID, resetCode: nil)
        }
        if let connection { pool.connectionGoingAway(connection.id) }
    }

    /// The server broke the protocol: the session's GOAWAY goes out, then close.
    private func closeAfterError() {
        guard let context, !isClosed else { return }
        flush()
        isClosed = true
        context.close(promise: nil)
    }

    private func flush() {
        guard let context, session.hasOutput else { return }
        context.writeAndFlush(wrapOutboundOut(session.takeOutput()), promise: nil)
    }

    // MARK: Health

    private func sendPing() {
        guard context != nil, pingTimeout == nil, let channel = context?.channel else { return }
        pingCounter &+= 1
        session.sendPing(pingCounter)
        flush()
        // No ACK in time: the connection is dead even if TCP has not noticed; close so it gets replaced.
        pingTimeout = channel.eventLoop.scheduleTask(in: TimeAmount(configuration.pingTimeout)) {
            channel.close(promise: nil)
        }
    }

    private func cancelTimers() {
        pingTask?.cancel()
        pingTask = nil
        sweepTask?.cancel()
        sweepTask = nil
        pingTimeout?.cancel()
        pingTimeout = nil
        readyTimeout?.cancel()
        readyTimeout = nil
    }
}
