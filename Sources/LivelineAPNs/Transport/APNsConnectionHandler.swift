import LivelineHTTP2
import NIOCore
import NIOHPACK

/// Runs one HTTP/2 connection (RFC 9113) on the bytes under TLS: writes each request as HEADERS
/// (+ DATA) on a new stream, matches response frames to requests by stream id, and watches stream 0:
/// the server's SETTINGS (how many streams we may open), GOAWAY (drain and replace), PING health
/// checks. Flow control both ways, CONTINUATION and padding are handled; a protocol violation by
/// the server ends the connection with GOAWAY. See ``HTTP2Wire`` for why this is not NIO's handler.
final class APNsConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private struct InFlight {
        var continuation: HTTP2Connection.ResponseContinuation
        var deadline: NIODeadline
        var status: Int?
        var headers = HPACKHeaders()
        var body: ByteBuffer?
        /// DATA payload bytes received, padding included (for flow control).
        var received = 0
    }

    /// The receive window offered for each stream and, from the start, for the connection.
    private static let receiveWindow = 1 << 20

    /// Set right after creation; cleared when the handler goes, to break the reference cycle.
    var connection: HTTP2Connection?
    private let pool: HTTP2ConnectionPool
    private let configuration: APNsConnectionPoolConfiguration
    private var context: ChannelHandlerContext?
    private var inFlight: [UInt32: InFlight] = [:]
    private var nextStreamID: UInt32 = 1
    private var isReady = false
    private var isClosed = false
    /// Why the channel failed (a TLS handshake error, a reset), for the pool's log.
    private var failure: (any Error)?
    private var prefaceSent = false
    /// Set when the server sent GOAWAY: streams above it were not processed.
    private var goAwayLastStreamID: UInt32?

    private var encoder = HPACKEncoder(allocator: ByteBufferAllocator(), useHuffmanEncoding: false)
    private var decoder = HPACKDecoder(allocator: ByteBufferAllocator(), maxDynamicTableSize: 4_096, maxHeaderListSize: 1 << 16)
    private var reader = HTTP2FrameReader(server: false)
    /// Frames written go out together at the end of a submission or a read burst.
    private var output = ByteBuffer()
    private var outbound = HTTP2Outbound()
    private var receiveCredit = HTTP2ReceiveCredit(streamWindow: receiveWindow)
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
        output = context.channel.allocator.buffer(capacity: 16_384)
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

    /// The client's connection preface: the magic, our SETTINGS, and a larger connection window.
    /// (TLS holds it back until the handshake is done.)
    private func sendPreface() {
        guard !prefaceSent else { return }
        prefaceSent = true
        output.writeBytes(HTTP2Wire.clientPreface)
        HTTP2Wire.writeSettings(
            [(.enablePush, 0), (.maxConcurrentStreams, 100), (.initialWindowSize, Self.receiveWindow), (.maxHeaderListSize, 1 << 16)],
            to: &output
        )
        HTTP2Wire.writeWindowUpdate(streamID: 0, increment: Self.receiveWindow - HTTP2Wire.defaultWindowSize, to: &output)
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
        guard context != nil, !isClosed, goAwayLastStreamID == nil else {
            for (_, continuation) in batch {
                continuation.resume(throwing: HTTP2TransportFailure.unprocessed("connection no longer accepts streams"))
            }
            return
        }
        let deadline = NIODeadline.now() + TimeAmount(configuration.requestTimeout)
        for (request, continuation) in batch {
            var block = ByteBuffer()
            do {
                try encoder.encode(headers: request.headers, to: &block)
            } catch {
                // Only an encoder left mid-block could throw; nothing was written for this request.
                continuation.resume(throwing: HTTP2TransportFailure.unprocessed("HPACK: \(error)"))
                continue
            }
            let streamID = nextStreamID
            nextStreamID += 2
            inFlight[streamID] = InFlight(continuation: continuation, deadline: deadline)
            let body = request.body.flatMap { $0.readableBytes > 0 ? $0 : nil }
            HTTP2Wire.writeHeaders(block, streamID: streamID, endStream: body == nil, maximumFrameSize: outbound.maximumFrameSize, to: &output)
            if let body {
                outbound.open(streamID)
                outbound.send(body, streamID: streamID, to: &output)
            }
        }
        flush()
        if nextStreamID > UInt32(Int32.max - 1_000) {
            // Stream ids are finite; retire the connection long before they run out.
            pool.connectionGoingAway(connection?.id ?? -1)
        }
    }

    private func complete(_ streamID: UInt32) {
        guard let request = inFlight.removeValue(forKey: streamID) else { return }
        // The server may answer before it read the whole body (an early 413): stop sending the rest.
        outbound.close(streamID)
        guard let status = request.status else {
            request.continuation.resume(throwing: HTTP2TransportFailure.interrupted("response without :status"))
            return
        }
        request.continuation.resume(returning: HTTP2Response(status: status, headers: request.headers, body: request.body))
    }

    private func fail(_ streamID: UInt32, resetCode: HTTP2Wire.ErrorCode?) {
        guard let request = inFlight.removeValue(forKey: streamID) else { return }
        outbound.close(streamID)
        request.continuation.resume(throwing: failure(for: streamID, resetCode: resetCode))
    }

    /// Whether a lost stream can safely be sent again: only if the server provably did not process it.
    private func failure(for streamID: UInt32, resetCode: HTTP2Wire.ErrorCode?) -> HTTP2TransportFailure {
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
        guard !expired.isEmpty else { return }
        for streamID in expired {
            if let request = inFlight.removeValue(forKey: streamID) {
                request.continuation.resume(throwing: HTTP2TransportFailure.interrupted("no response in time"))
            }
            outbound.close(streamID)
            HTTP2Wire.writeResetStream(streamID, code: .cancel, to: &output)
        }
        flush()
    }

    // MARK: Inbound frames

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !isClosed else { return }
        reader.append(unwrapInboundIn(data))
        do {
            while !isClosed, let event = try reader.next() {
                switch event {
                case .headerBlock(let block): receiveHeaderBlock(block)
                case .frame(let frame): handle(frame)
                }
            }
        } catch {
            connectionError(error)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flush()
        context.fireChannelReadComplete()
    }

    private func handle(_ frame: HTTP2Wire.Frame) {
        switch frame.type {
        case .data:
            guard frame.streamID != 0, var data = HTTP2Wire.content(of: frame) else { return connectionError(.protocolError) }
            let length = frame.payload.readableBytes
            guard var request = inFlight[frame.streamID] else {
                // Flow control counts DATA even for a stream we gave up on.
                return receiveCredit.received(length, streamID: frame.streamID, streamTotal: nil, to: &output)
            }
            request.received += length
            receiveCredit.received(length, streamID: frame.streamID, streamTotal: request.received, to: &output)
            if data.readableBytes > 0 {
                if request.body == nil {
                    request.body = data
                } else {
                    request.body!.writeBuffer(&data)
                }
            }
            inFlight[frame.streamID] = request
            if frame.has(HTTP2Wire.Flag.endStream) { complete(frame.streamID) }
        case .rstStream:
            var payload = frame.payload
            guard frame.streamID != 0, let code = payload.readInteger(as: UInt32.self) else { return connectionError(.protocolError) }
            fail(frame.streamID, resetCode: HTTP2Wire.ErrorCode(rawValue: code) ?? .internalError)
        case .settings:
            receiveSettings(frame)
        case .ping:
            guard frame.streamID == 0, frame.payload.readableBytes == 8 else { return connectionError(.frameSizeError) }
            if frame.has(HTTP2Wire.Flag.ack) {
                pingTimeout?.cancel()
                pingTimeout = nil
            } else {
                HTTP2Wire.writePingAcknowledgement(frame.payload, to: &output)
            }
        case .goAway:
            var payload = frame.payload
            guard let last = payload.readInteger(as: UInt32.self) else { return connectionError(.frameSizeError) }
            receiveGoAway(lastStreamID: last & 0x7FFF_FFFF)
        case .windowUpdate:
            do { try outbound.receiveWindowUpdate(frame, to: &output) } catch { connectionError(error) }
        case .pushPromise:
            // We said SETTINGS_ENABLE_PUSH = 0.
            connectionError(.protocolError)
        case .headers, .continuation, .priority, nil:
            // Header blocks come whole from the reader; priorities mean nothing here.
            break
        }
    }

    private func receiveHeaderBlock(_ block: HTTP2FrameReader.HeaderBlock) {
        var fragments = block.fragments
        // Every block is decoded, even for a stream we gave up on: HPACK state is per connection.
        let headers: HPACKHeaders
        do {
            headers = try decoder.decodeHeaders(from: &fragments)
        } catch {
            return connectionError(.compressionError)
        }
        let streamID = block.streamID
        if inFlight[streamID]?.status == nil, let raw = headers.first(name: ":status"), let code = Int(raw), code >= 200 {
            // 1xx heads are skipped; the final head follows.
            inFlight[streamID]?.status = code
            inFlight[streamID]?.headers = headers
        }
        if block.endStream { complete(streamID) }
    }

    private func receiveSettings(_ frame: HTTP2Wire.Frame) {
        let settings: [(HTTP2Wire.Setting, Int)]
        do {
            settings = try outbound.receiveSettings(frame, to: &output)
        } catch {
            return connectionError(error)
        }
        if frame.has(HTTP2Wire.Flag.ack) { return }
        var advertisedStreams: Int?
        for (setting, value) in settings {
            switch setting {
            case .maxConcurrentStreams:
                advertisedStreams = value
            case .headerTableSize:
                // Our encoder's table may not be larger than the server's decoder allows.
                try? encoder.setDynamicTableSize(min(value, HPACKEncoder.defaultDynamicTableSize))
            default:
                break
            }
        }
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
        if goAwayLastStreamID.map({ lastStreamID < $0 }) ?? true {
            goAwayLastStreamID = lastStreamID
        }
        // Streams above last-stream-id were not processed: hand them back for another connection.
        let unprocessed = inFlight.keys.filter { $0 > lastStreamID }
        for streamID in unprocessed {
            fail(streamID, resetCode: nil)
        }
        if let connection { pool.connectionGoingAway(connection.id) }
    }

    /// The server broke the protocol: GOAWAY, then close; channelInactive fails what was in flight.
    private func connectionError(_ code: HTTP2Wire.ErrorCode) {
        guard let context, !isClosed else { return }
        HTTP2Wire.writeGoAway(lastStreamID: 0, code: code, to: &output)
        flush()
        isClosed = true
        context.close(promise: nil)
    }

    private func flush() {
        guard let context, output.readableBytes > 0 else { return }
        context.writeAndFlush(wrapOutboundOut(output), promise: nil)
        output = context.channel.allocator.buffer(capacity: 16_384)
    }

    // MARK: Health

    private func sendPing() {
        guard context != nil, pingTimeout == nil, let channel = context?.channel else { return }
        pingCounter &+= 1
        HTTP2Wire.writeFrameHeader(length: 8, type: .ping, streamID: 0, to: &output)
        output.writeInteger(pingCounter)
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
