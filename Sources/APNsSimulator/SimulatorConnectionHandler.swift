import LivelineHTTP2
import NIOCore
import NIOHPACK

/// One simulated APNs connection: the server side of HTTP/2 (RFC 9113), written for the simulator,
/// on the bytes under TLS. It collects each stream's HEADERS and DATA, lets ``SimulatorCore`` decide,
/// and writes the answer on the same stream. It also runs the per-connection behaviour: the GOAWAY
/// fault, raising SETTINGS_MAX_CONCURRENT_STREAMS after the first authenticated request, and
/// stream-concurrency accounting.
///
/// It shares the benchmark machine with the sender it measures, so it must be cheap: through NIO's
/// `NIOHTTP2Handler` it cost a quarter of the sender's CPU (see ``HTTP2Wire`` for why). It keeps
/// what a client can observe: the preface and SETTINGS exchange, the stream limit (REFUSED_STREAM
/// above it), flow control both ways, PING, RST_STREAM, GOAWAY, CONTINUATION and padding, and
/// GOAWAY + close for bad frames.
final class SimulatorConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private struct Stream {
        var headers: HPACKHeaders
        var body: ByteBuffer?
        /// DATA payload bytes received, padding included (for flow control).
        var received = 0
    }

    private let core: SimulatorCore
    private var decoder = HPACKDecoder(allocator: ByteBufferAllocator(), maxDynamicTableSize: 4_096, maxHeaderListSize: 1 << 16)
    private var reader = HTTP2FrameReader(server: true)
    /// Frames written during a read burst go out together at its end: one TLS record and one
    /// write(2) for many answers.
    private var output = ByteBuffer()
    private var settingsSent = false
    private var failed = false

    /// Open streams: those whose request or answer is not complete.
    private var streams: [UInt32: Stream] = [:]
    private var highestStreamID: UInt32 = 0
    private var streamsSeen = 0
    private var maximumActiveStreams = 0
    private var streamLimit: Int
    private var raisedStreamLimit = false
    /// Set once this connection sent GOAWAY: streams above it are ignored (not processed), as APNs does.
    private var goAwayLastStreamID: UInt32?

    private var outbound = HTTP2Outbound()
    private var receiveCredit = HTTP2ReceiveCredit(streamWindow: receiveWindow)

    /// The receive window granted to each stream and, once raised at start, to the connection.
    private static let receiveWindow = 1 << 20

    init(core: SimulatorCore) {
        self.core = core
        self.streamLimit = core.configuration.startWithOneStream ? 1 : core.configuration.maximumConcurrentStreams
    }

    // MARK: Connection

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { sendSettings(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        sendSettings(context: context)
        context.fireChannelActive()
    }

    /// The server's connection preface: its SETTINGS, and a larger connection window.
    private func sendSettings(context: ChannelHandlerContext) {
        guard !settingsSent else { return }
        settingsSent = true
        HTTP2Wire.writeSettings(
            [(.maxConcurrentStreams, streamLimit), (.initialWindowSize, Self.receiveWindow), (.maxHeaderListSize, 1 << 16)],
            to: &output
        )
        HTTP2Wire.writeWindowUpdate(streamID: 0, increment: Self.receiveWindow - HTTP2Wire.defaultWindowSize, to: &output)
        flush(context: context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        reader.append(unwrapInboundIn(data))
        do {
            while !failed, let event = try reader.next() {
                switch event {
                case .headerBlock(let block): receiveHeaderBlock(block, context: context)
                case .frame(let frame): handle(frame, context: context)
                }
            }
        } catch {
            connectionError(error, context: context)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flush(context: context)
        context.fireChannelReadComplete()
    }

    private func handle(_ frame: HTTP2Wire.Frame, context: ChannelHandlerContext) {
        switch frame.type {
        case .data:
            receiveData(frame, context: context)
        case .rstStream:
            // A stream the client reset (e.g. its timeout) is forgotten, with any answer still queued.
            streams.removeValue(forKey: frame.streamID)
            outbound.close(frame.streamID)
        case .settings:
            // The header table size does not matter here: answers never use the dynamic table.
            do { _ = try outbound.receiveSettings(frame, to: &output) } catch { connectionError(error, context: context) }
        case .ping:
            guard frame.streamID == 0, frame.payload.readableBytes == 8 else { return connectionError(.frameSizeError, context: context) }
            if !frame.has(HTTP2Wire.Flag.ack) { HTTP2Wire.writePingAcknowledgement(frame.payload, to: &output) }
        case .windowUpdate:
            do { try outbound.receiveWindowUpdate(frame, to: &output) } catch { connectionError(error, context: context) }
        case .pushPromise:
            // Clients never push.
            connectionError(.protocolError, context: context)
        case .headers, .continuation, .priority, .goAway, nil:
            // Header blocks come whole from the reader; priorities mean nothing here; a client's
            // GOAWAY is followed by its close.
            break
        }
    }

    private func receiveHeaderBlock(_ block: HTTP2FrameReader.HeaderBlock, context: ChannelHandlerContext) {
        let streamID = block.streamID
        guard streamID % 2 == 1 else { return connectionError(.protocolError, context: context) }  // client streams are odd
        // A new stream is above every earlier one; a lower id not open is a closed stream.
        let isNew = streams[streamID] == nil && streamID > highestStreamID
        if isNew { highestStreamID = streamID }
        var fragments = block.fragments
        // Every block is decoded, even for a stream that is then ignored: HPACK state is per connection.
        let headers: HPACKHeaders
        do {
            headers = try decoder.decodeHeaders(from: &fragments)
        } catch {
            return connectionError(.compressionError, context: context)
        }
        if isNew {
            if let goAway = goAwayLastStreamID, streamID > goAway { return }
            guard streams.count < streamLimit else {
                HTTP2Wire.writeResetStream(streamID, code: .refusedStream, to: &output)
                return
            }
            streams[streamID] = Stream(headers: headers)
            streamOpened(streamID, context: context)
        } else if streams[streamID] == nil {
            return  // e.g. trailers of a stream already answered
        }
        if block.endStream { respond(streamID, context: context) }
    }

    private func receiveData(_ frame: HTTP2Wire.Frame, context: ChannelHandlerContext) {
        guard frame.streamID != 0, var data = HTTP2Wire.content(of: frame) else {
            return connectionError(.protocolError, context: context)
        }
        // Flow control counts the whole payload, padding included, even on streams we ignore.
        let length = frame.payload.readableBytes
        guard var stream = streams[frame.streamID] else {
            return receiveCredit.received(length, streamID: frame.streamID, streamTotal: nil, to: &output)
        }
        stream.received += length
        receiveCredit.received(length, streamID: frame.streamID, streamTotal: stream.received, to: &output)
        if stream.body == nil {
            stream.body = data
        } else {
            stream.body!.writeBuffer(&data)
        }
        streams[frame.streamID] = stream
        if frame.has(HTTP2Wire.Flag.endStream) { respond(frame.streamID, context: context) }
    }

    /// Ends the connection after a protocol violation, as RFC 9113 §5.4.1 says: GOAWAY, then close.
    ///
    /// The close waits a moment while input is read and dropped: closing a socket with unread input
    /// makes TCP send a reset, which can overtake the GOAWAY and hide why the connection ended.
    private func connectionError(_ code: HTTP2Wire.ErrorCode, context: ChannelHandlerContext) {
        guard !failed else { return }
        failed = true
        HTTP2Wire.writeGoAway(lastStreamID: highestStreamID, code: code, to: &output)
        flush(context: context)
        let channel = context.channel
        context.eventLoop.scheduleTask(in: .milliseconds(100)) { channel.close(promise: nil) }
    }

    // MARK: Answers

    private func respond(_ streamID: UInt32, context: ChannelHandlerContext) {
        guard let stream = streams[streamID] else { return }
        let headers = stream.headers
        let request = SimulatorRequest(
            method: headers.first(name: ":method") ?? "",
            path: headers.first(name: ":path") ?? "",
            headers: headers,
            body: stream.body
        )
        let reply = core.handle(request)
        if reply.resetConnection {
            // Cut the TCP connection with every stream on it in flight.
            failed = true
            context.close(mode: .all, promise: nil)
            return
        }
        if reply.authenticated { raiseStreamLimitIfNeeded(context: context) }
        if reply.delayMilliseconds > 0 {
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: .milliseconds(Int64(reply.delayMilliseconds))) {
                let (handler, context) = loopBound.value
                handler.write(reply, on: streamID, context: context)
                handler.flush(context: context)
            }
        } else {
            write(reply, on: streamID, context: context)
        }
    }

    private func write(_ reply: SimulatorReply, on streamID: UInt32, context: ChannelHandlerContext) {
        // The stream may have been reset by the client while a delayed answer waited.
        guard streams.removeValue(forKey: streamID) != nil, !failed, context.channel.isActive else { return }
        var headers = reply.headers
        let body = reply.body ?? []
        if !body.isEmpty { headers.append(("content-length", String(body.count))) }
        var block = context.channel.allocator.buffer(capacity: 64)
        ResponseHeaderBlock.write(status: reply.status, headers: headers, to: &block)
        HTTP2Wire.writeHeaders(
            block, streamID: streamID, endStream: body.isEmpty, maximumFrameSize: outbound.maximumFrameSize, to: &output
        )
        if !body.isEmpty {
            // The window starts now: a client has no reason to widen it before the answer begins.
            outbound.open(streamID)
            outbound.send(context.channel.allocator.buffer(bytes: body), streamID: streamID, to: &output)
        }
    }

    // MARK: Per-connection behaviour

    private func streamOpened(_ streamID: UInt32, context: ChannelHandlerContext) {
        if streams.count > maximumActiveStreams {
            maximumActiveStreams = streams.count
            let observed = maximumActiveStreams
            core.state.withLockedValue { state in
                if observed > state.statistics.maximumObservedConcurrentStreams {
                    state.statistics.maximumObservedConcurrentStreams = observed
                }
            }
        }
        streamsSeen += 1
        if let limit = core.configuration.goAwayAfterStreams, streamsSeen == limit, goAwayLastStreamID == nil, claimGoAway() {
            // This stream is still answered; everything above it is not processed.
            goAwayLastStreamID = streamID
            HTTP2Wire.writeGoAway(lastStreamID: streamID, code: .noError, to: &output)
            // The client should close after draining; close anyway after a grace period, as APNs does.
            let channel = context.channel
            context.eventLoop.scheduleTask(in: .seconds(5)) { channel.close(promise: nil) }
        }
    }

    private func raiseStreamLimitIfNeeded(context: ChannelHandlerContext) {
        guard core.configuration.startWithOneStream, !raisedStreamLimit else { return }
        raisedStreamLimit = true
        streamLimit = core.configuration.maximumConcurrentStreams
        HTTP2Wire.writeSettings([(.maxConcurrentStreams, streamLimit)], to: &output)
    }

    private func claimGoAway() -> Bool {
        core.state.withLockedValue { state in
            if let cap = core.configuration.goAwayConnectionLimit, state.goAwayConnectionsUsed >= cap { return false }
            state.goAwayConnectionsUsed += 1
            state.statistics.goAwaysSent += 1
            return true
        }
    }

    private func flush(context: ChannelHandlerContext) {
        guard output.readableBytes > 0 else { return }
        context.writeAndFlush(wrapOutboundOut(output), promise: nil)
        output = context.channel.allocator.buffer(capacity: 16_384)
    }
}
