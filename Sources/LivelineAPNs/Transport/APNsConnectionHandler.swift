import NIOCore
import NIOHPACK
import NIOHTTP2

/// Runs one HTTP/2 connection at the frame level: writes each request as HEADERS (+ DATA) on a new
/// stream, matches response frames to requests by stream id, and watches stream 0: the server's
/// SETTINGS (how many streams we may open), GOAWAY (drain and replace), PING health checks.
final class APNsConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private struct InFlight {
        var continuation: HTTP2Connection.ResponseContinuation
        var deadline: NIODeadline
        var status: Int?
        var headers = HPACKHeaders()
        var body: ByteBuffer?
    }

    /// Set right after creation; cleared when the handler goes, to break the reference cycle.
    var connection: HTTP2Connection?
    private let pool: HTTP2ConnectionPool
    private let configuration: APNsConnectionPoolConfiguration
    private var context: ChannelHandlerContext?
    private var inFlight: [HTTP2StreamID: InFlight] = [:]
    private var nextStreamID = HTTP2StreamID(1)
    private var isReady = false
    private var isClosed = false
    /// Set when the server sent GOAWAY: streams above it were not processed.
    private var goAwayLastStreamID: HTTP2StreamID?
    private var unacknowledgedInboundBytes = 0
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
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelTimers()
        self.context = nil
        connection = nil
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
            pool.connectionClosed(connection.id, wasReady: isReady)
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Stream-level errors concern one stream (it also gets a StreamClosedEvent); anything else
        // (TLS, protocol) ends the connection.
        if !(error is NIOHTTP2Errors.StreamError) {
            context.close(promise: nil)
        }
    }

    // MARK: Requests

    /// Writes a batch of requests, one new stream each, with a single flush.
    func submit(_ batch: [(HTTP2Request, HTTP2Connection.ResponseContinuation)]) {
        guard let context, !isClosed, goAwayLastStreamID == nil else {
            for (_, continuation) in batch {
                continuation.resume(throwing: HTTP2TransportFailure.unprocessed("connection no longer accepts streams"))
            }
            return
        }
        let deadline = NIODeadline.now() + TimeAmount(configuration.requestTimeout)
        for (request, continuation) in batch {
            let streamID = nextStreamID
            nextStreamID = streamID.advanced(by: 2)
            inFlight[streamID] = InFlight(continuation: continuation, deadline: deadline)
            let hasBody = (request.body?.readableBytes ?? 0) > 0
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: request.headers, endStream: !hasBody)))),
                promise: nil
            )
            if hasBody, let body = request.body {
                context.write(
                    wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(body), endStream: true)))),
                    promise: nil
                )
            }
        }
        context.flush()
        if nextStreamID > HTTP2StreamID(Int32.max - 1_000) {
            // Stream ids are finite; retire the connection long before they run out.
            pool.connectionGoingAway(connection?.id ?? -1)
        }
    }

    private func complete(_ streamID: HTTP2StreamID) {
        guard let request = inFlight.removeValue(forKey: streamID) else { return }
        guard let status = request.status else {
            request.continuation.resume(throwing: HTTP2TransportFailure.interrupted("response without :status"))
            return
        }
        request.continuation.resume(returning: HTTP2Response(status: status, headers: request.headers, body: request.body))
    }

    private func fail(_ streamID: HTTP2StreamID, resetCode: HTTP2ErrorCode?) {
        guard let request = inFlight.removeValue(forKey: streamID) else { return }
        request.continuation.resume(throwing: failure(for: streamID, resetCode: resetCode))
    }

    /// Whether a lost stream can safely be sent again: only if the server provably did not process it.
    private func failure(for streamID: HTTP2StreamID, resetCode: HTTP2ErrorCode?) -> HTTP2TransportFailure {
        if let last = goAwayLastStreamID, streamID > last {
            return .unprocessed("stream above GOAWAY last-stream-id")
        }
        if resetCode == .refusedStream {
            return .unprocessed("stream refused by server")
        }
        return .interrupted(resetCode.map { "stream reset (\($0))" } ?? "connection closed mid-flight")
    }

    private func expireRequests() {
        let now = NIODeadline.now()
        let expired = inFlight.filter { $0.value.deadline <= now }.map(\.key)
        guard !expired.isEmpty, let context else { return }
        for streamID in expired {
            if let request = inFlight.removeValue(forKey: streamID) {
                request.continuation.resume(throwing: HTTP2TransportFailure.interrupted("no response in time"))
            }
            context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .rstStream(.cancel))), promise: nil)
        }
        context.flush()
    }

    // MARK: Inbound frames

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        if frame.streamID == .rootStream {
            connectionFrame(frame, context: context)
            return
        }
        let streamID = frame.streamID
        switch frame.payload {
        case .headers(let headers):
            if inFlight[streamID]?.status == nil, let raw = headers.headers.first(name: ":status"), let code = Int(raw),
                code >= 200
            {
                // 1xx heads are skipped; the final head follows.
                inFlight[streamID]?.status = code
                inFlight[streamID]?.headers = headers.headers
            }
            if headers.endStream { complete(streamID) }
        case .data(let data):
            let length = data.data.readableBytes
            acknowledgeInbound(bytes: length, context: context)
            if case .byteBuffer(var buffer) = data.data, length > 0 {
                if inFlight[streamID]?.body == nil {
                    inFlight[streamID]?.body = buffer
                } else {
                    inFlight[streamID]?.body?.writeBuffer(&buffer)
                }
            }
            if data.endStream { complete(streamID) }
        case .rstStream(let code):
            fail(streamID, resetCode: code)
        default:
            break
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Only abnormal closes matter; a normal close follows the END_STREAM we already handled.
        if !inFlight.isEmpty, let closed = event as? StreamClosedEvent, closed.reason != nil {
            fail(closed.streamID, resetCode: closed.reason)
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// Without a stream multiplexer nobody else returns connection-level flow-control credit.
    private func acknowledgeInbound(bytes: Int, context: ChannelHandlerContext) {
        unacknowledgedInboundBytes += bytes
        if unacknowledgedInboundBytes >= 16_384 {
            let increment = unacknowledgedInboundBytes
            unacknowledgedInboundBytes = 0
            context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))), promise: nil)
            context.flush()
        }
    }

    private func connectionFrame(_ frame: HTTP2Frame, context: ChannelHandlerContext) {
        switch frame.payload {
        case .settings(.settings(let settings)):
            let advertised = settings.last { $0.parameter == .maxConcurrentStreams }?.value
            guard let connection else { return }
            if !isReady {
                isReady = true
                readyTimeout?.cancel()
                readyTimeout = nil
                // No limit advertised means "unlimited" in HTTP/2; our own cap applies.
                pool.connectionReady(
                    connection,
                    maximumStreams: min(advertised ?? Int.max, configuration.maximumStreamsPerConnection)
                )
            } else if let advertised {
                pool.connection(connection.id, maximumStreamsChanged: min(advertised, configuration.maximumStreamsPerConnection))
            }
        case .goAway(let lastStreamID, _, _):
            if goAwayLastStreamID.map({ lastStreamID < $0 }) ?? true {
                goAwayLastStreamID = lastStreamID
            }
            // Streams above last-stream-id were not processed: hand them back for another connection.
            let unprocessed = inFlight.keys.filter { $0 > lastStreamID }
            for streamID in unprocessed {
                fail(streamID, resetCode: nil)
            }
            if let connection { pool.connectionGoingAway(connection.id) }
        case .ping(_, ack: true):
            pingTimeout?.cancel()
            pingTimeout = nil
        default:
            break
        }
    }

    // MARK: Health

    private func sendPing() {
        guard let context, pingTimeout == nil else { return }
        pingCounter &+= 1
        context.writeAndFlush(
            wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .ping(HTTP2PingData(withInteger: pingCounter), ack: false))),
            promise: nil
        )
        let channel = context.channel
        // No ACK in time: the connection is dead even if TCP has not noticed; close so it gets replaced.
        pingTimeout = context.eventLoop.scheduleTask(in: TimeAmount(configuration.pingTimeout)) {
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
