import LivelineHTTP2
import NIOCore
import NIOHPACK

// Tests: Tests/LivelineAPNsTests/SimulatorWireTests.swift, Tests/LivelineAPNsTests/DevicePushTests.swift

/// One simulated APNs connection: the server end of an ``HTTP2Session`` on the bytes under TLS.
/// It collects each stream's request from the session's events, lets ``SimulatorCore`` decide, and
/// writes the answer on the same stream. The session enforces the protocol (the stream limit with
/// REFUSED_STREAM above it, flow control, stream states, flood limits, the SETTINGS timeout); this
/// handler runs what is APNs' alone: the GOAWAY, reset and delay faults, raising
/// SETTINGS_MAX_CONCURRENT_STREAMS after the first authenticated request, and statistics.
///
/// It shares the benchmark machine with the sender it measures, so it must be cheap: through NIO's
/// `NIOHTTP2Handler` it cost a quarter of the sender's CPU (see ``HTTP2Wire`` for why).
final class SimulatorConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private struct Stream {
        var headers: HPACKHeaders
        var body: ByteBuffer?

        mutating func append(_ data: inout ByteBuffer) {
            if body == nil {
                body = data
            } else {
                body!.writeBuffer(&data)
            }
        }
    }

    private let core: SimulatorCore
    /// Frames written during a read burst go out together at its end: one TLS record and one
    /// write(2) for many answers.
    private var session: HTTP2Session
    private var settingsSent = false
    private var failed = false

    /// Streams whose request is being received or answered.
    private var streams: [UInt32: Stream] = [:]
    private var streamsSeen = 0
    private var maximumActiveStreams = 0
    private var streamLimit: Int
    private var raisedStreamLimit = false
    /// Set once this connection sent the GOAWAY fault.
    private var sentGoAway = false

    init(core: SimulatorCore) {
        self.core = core
        self.streamLimit = core.configuration.startWithOneStream ? 1 : core.configuration.maximumConcurrentStreams
        var configuration = HTTP2Session.Configuration()
        configuration.maximumConcurrentStreams = streamLimit
        // Pushes are at most a few KiB; a stream's body is held whole until it ends, so one stream
        // window (1 MiB) is all a client may send on it.
        configuration.maximumStreamData = configuration.receiveWindow
        session = HTTP2Session(role: .server, configuration: configuration)
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
        session.start(now: .now())
        watchSettingsTimeout(context: context)
        flush(context: context)
    }

    /// The session keeps no clock: look again once the SETTINGS just sent should have been acknowledged.
    private func watchSettingsTimeout(context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: session.configuration.settingsTimeout + .milliseconds(10)) {
            let (handler, context) = loopBound.value
            guard !handler.failed, context.channel.isActive, let event = handler.session.checkTimeouts(now: .now()) else { return }
            handler.handle(event, context: context)
            handler.flush(context: context)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        session.receive(unwrapInboundIn(data))
        let now = NIODeadline.now()
        while !failed, let event = session.nextEvent(now: now) {
            handle(event, context: context)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flush(context: context)
        context.fireChannelReadComplete()
    }

    private func handle(_ event: HTTP2Session.Event, context: ChannelHandlerContext) {
        switch event {
        case .headers(let streamID, let headers, let endStream):
            if streams[streamID] == nil {
                // The session reports a peer's header block only on a stream it accepted; a second
                // block on a known stream is trailers, which add nothing to a push.
                streams[streamID] = Stream(headers: headers)
                streamOpened(streamID, context: context)
            }
            if endStream { respond(streamID, context: context) }
        case .data(let streamID, var data, let endStream):
            streams[streamID]?.append(&data)
            if endStream { respond(streamID, context: context) }
        case .streamReset(let streamID, _), .streamError(let streamID, _):
            // A stream the client reset (e.g. its timeout) is forgotten, with any answer still queued.
            streams.removeValue(forKey: streamID)
        case .connectionError:
            connectionError(context: context)
        case .settings, .goAway, .pingAcknowledged:
            // A client's GOAWAY is followed by its close.
            break
        }
    }

    /// Ends the connection after a protocol violation, as RFC 9113 §5.4.1 says: the session wrote
    /// GOAWAY, then close.
    ///
    /// The close waits a moment while input is read and dropped: closing a socket with unread input
    /// makes TCP send a reset, which can overtake the GOAWAY and hide why the connection ended.
    private func connectionError(context: ChannelHandlerContext) {
        guard !failed else { return }
        failed = true
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
        // Not NIO's encoder: see ResponseHeaderBlock for the measurement.
        ResponseHeaderBlock.write(status: reply.status, headers: headers, to: &block)
        session.sendResponse(
            headerBlock: block, body: body.isEmpty ? nil : context.channel.allocator.buffer(bytes: body), streamID: streamID
        )
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
        if let limit = core.configuration.goAwayAfterStreams, streamsSeen == limit, !sentGoAway, claimGoAway() {
            // This stream is still answered; everything above it is not processed.
            sentGoAway = true
            session.sendGoAway(lastStreamID: streamID, code: .noError)
            // The client should close after draining; close anyway after a grace period, as APNs does.
            let channel = context.channel
            context.eventLoop.scheduleTask(in: .seconds(5)) { channel.close(promise: nil) }
        }
    }

    private func raiseStreamLimitIfNeeded(context: ChannelHandlerContext) {
        guard core.configuration.startWithOneStream, !raisedStreamLimit else { return }
        raisedStreamLimit = true
        streamLimit = core.configuration.maximumConcurrentStreams
        session.setMaximumConcurrentStreams(streamLimit, now: .now())
        watchSettingsTimeout(context: context)
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
        guard session.hasOutput else { return }
        context.writeAndFlush(wrapOutboundOut(session.takeOutput()), promise: nil)
    }
}
