import NIOCore
import NIOHPACK
import NIOHTTP2

/// One simulated APNs connection, at the HTTP/2 frame level: collects each stream's HEADERS and DATA,
/// lets ``SimulatorCore`` decide, and writes the answer on the same stream. Also runs the
/// per-connection behaviour: the GOAWAY fault, raising SETTINGS_MAX_CONCURRENT_STREAMS after the first
/// authenticated request, and stream-concurrency accounting.
///
/// No child channel per stream: the simulator must stay far cheaper than the client it tests.
final class SimulatorConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private struct PartialRequest {
        var headers: HPACKHeaders
        var body: ByteBuffer?
    }

    private let core: SimulatorCore
    private var streams: [HTTP2StreamID: PartialRequest] = [:]
    private var streamsSeen = 0
    private var activeStreams = 0
    private var maximumActiveStreams = 0
    private var raisedStreamLimit = false
    private var unacknowledgedInboundBytes = 0
    /// Set once this connection sent GOAWAY: streams above it are ignored (not processed), as APNs does.
    private var goAwayLastStreamID: HTTP2StreamID?
    /// Answers written during a read are flushed once, at the end of the read burst: one TLS record
    /// and one write(2) for many responses.
    private var needsFlush = false

    init(core: SimulatorCore) {
        self.core = core
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let streamID = frame.streamID
        guard streamID != .rootStream else { return }
        switch frame.payload {
        case .headers(let headers):
            if streams[streamID] == nil {
                if let goAway = goAwayLastStreamID, streamID > goAway { return }
                streams[streamID] = PartialRequest(headers: headers.headers)
                streamOpened(streamID, context: context)
            }
            if headers.endStream { respond(streamID, context: context) }
        case .data(let data):
            acknowledgeInbound(bytes: data.data.readableBytes, context: context)
            guard streams[streamID] != nil else { return }
            if case .byteBuffer(var buffer) = data.data {
                if streams[streamID]!.body == nil {
                    streams[streamID]!.body = buffer
                } else {
                    streams[streamID]!.body!.writeBuffer(&buffer)
                }
            }
            if data.endStream { respond(streamID, context: context) }
        default:
            break
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // A stream the client reset (e.g. its timeout) is forgotten.
        if !streams.isEmpty, let closed = event as? StreamClosedEvent, closed.reason != nil, streams.removeValue(forKey: closed.streamID) != nil {
            activeStreams -= 1
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func respond(_ streamID: HTTP2StreamID, context: ChannelHandlerContext) {
        guard let partial = streams[streamID] else { return }
        let request = SimulatorRequest(
            method: partial.headers.first(name: ":method") ?? "",
            path: partial.headers.first(name: ":path") ?? "",
            headers: partial.headers,
            body: partial.body
        )
        let reply = core.handle(request)
        if reply.resetConnection {
            // Cut the TCP connection with every stream on it in flight.
            context.close(mode: .all, promise: nil)
            return
        }
        if reply.authenticated { raiseStreamLimitIfNeeded(context: context) }
        if reply.delayMilliseconds > 0 {
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: .milliseconds(Int64(reply.delayMilliseconds))) {
                let (handler, context) = loopBound.value
                handler.write(reply, on: streamID, context: context)
                context.flush()
            }
        } else {
            write(reply, on: streamID, context: context)
            needsFlush = true
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if needsFlush {
            needsFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    private func write(_ reply: SimulatorReply, on streamID: HTTP2StreamID, context: ChannelHandlerContext) {
        // The stream may have been reset by the client while a delayed answer waited.
        guard streams.removeValue(forKey: streamID) != nil, context.channel.isActive else { return }
        activeStreams -= 1
        var headers = HPACKHeaders()
        headers.add(name: ":status", value: String(reply.status))
        for (name, value) in reply.headers {
            // Ids are unique per response: keep them out of the HPACK dynamic table.
            headers.add(name: name, value: value, indexing: name.hasSuffix("-id") ? .nonIndexable : .indexable)
        }
        if let body = reply.body, !body.isEmpty {
            headers.add(name: "content-length", value: String(body.count))
            context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers, endStream: false)))), promise: nil)
            let buffer = context.channel.allocator.buffer(bytes: body)
            context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(buffer), endStream: true)))), promise: nil)
        } else {
            context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers, endStream: true)))), promise: nil)
        }
    }

    private func streamOpened(_ streamID: HTTP2StreamID, context: ChannelHandlerContext) {
        activeStreams += 1
        if activeStreams > maximumActiveStreams {
            maximumActiveStreams = activeStreams
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
            writeRawGoAway(lastStreamID: streamID, context: context)
            // The client should close after draining; close anyway after a grace period, as APNs does.
            let channel = context.channel
            context.eventLoop.scheduleTask(in: .seconds(5)) { channel.close(promise: nil) }
        }
    }

    /// Writes GOAWAY as raw bytes underneath NIO's HTTP/2 handler.
    ///
    /// Sent through NIO, the GOAWAY makes NIO refuse the client's newer streams itself, and the DATA
    /// frames that follow those refused HEADERS are then treated as a protocol error that kills the
    /// whole connection, so the streams at or below last-stream-id would never be answered. Writing
    /// the frame below NIO keeps NIO's view of the connection unchanged; this handler ignores the
    /// streams above last-stream-id instead, which is what the client observes from APNs.
    private func writeRawGoAway(lastStreamID: HTTP2StreamID, context: ChannelHandlerContext) {
        guard let http2Context = try? context.pipeline.syncOperations.context(handlerType: NIOHTTP2Handler.self) else {
            return
        }
        var frame = context.channel.allocator.buffer(capacity: 17)
        frame.writeBytes([0, 0, 8, 0x07, 0])  // length 8, type GOAWAY, no flags
        frame.writeInteger(UInt32(0))  // stream 0
        frame.writeInteger(UInt32(Int32(lastStreamID)))
        frame.writeInteger(UInt32(0))  // NO_ERROR
        http2Context.writeAndFlush(NIOAny(frame), promise: nil)
    }

    private func raiseStreamLimitIfNeeded(context: ChannelHandlerContext) {
        guard core.configuration.startWithOneStream, !raisedStreamLimit else { return }
        raisedStreamLimit = true
        let settings = HTTP2Frame(
            streamID: .rootStream,
            payload: .settings(.settings([
                HTTP2Setting(parameter: .maxConcurrentStreams, value: core.configuration.maximumConcurrentStreams)
            ]))
        )
        context.write(wrapOutboundOut(settings), promise: nil)
        needsFlush = true
    }

    /// Without a stream multiplexer nobody else returns connection-level flow-control credit.
    private func acknowledgeInbound(bytes: Int, context: ChannelHandlerContext) {
        unacknowledgedInboundBytes += bytes
        if unacknowledgedInboundBytes >= 16_384 {
            let increment = unacknowledgedInboundBytes
            unacknowledgedInboundBytes = 0
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))),
                promise: nil
            )
            needsFlush = true
        }
    }

    private func claimGoAway() -> Bool {
        core.state.withLockedValue { state in
            if let cap = core.configuration.goAwayConnectionLimit, state.goAwayConnectionsUsed >= cap { return false }
            state.goAwayConnectionsUsed += 1
            state.statistics.goAwaysSent += 1
            return true
        }
    }
}
