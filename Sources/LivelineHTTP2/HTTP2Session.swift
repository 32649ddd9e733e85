import NIOCore
import NIOHPACK

/// One HTTP/2 connection (RFC 9113) as a value with no I/O, for either end: bytes in, events out,
/// bytes to write, the shape of nghttp2's session API. The APNs client and the simulator both run on
/// it, so the protocol is enforced once, and tested without sockets.
///
/// It owns what the protocol requires of every endpoint: the frames, stream states (§5.1), flow
/// control both ways (§5.2, §6.9), SETTINGS with their acknowledgement and its timeout (§6.5.3),
/// PING answers, and HPACK (NIO's decoder, and our ``HeaderBlockEncoder``; one per direction, as
/// the header table is per connection).
/// The caller only maps events to requests and answers. Time is a value the caller passes in, so a
/// test drives the SETTINGS timeout and the flood limits without a clock.
///
/// A peer that breaks the protocol gets the RFC's error: a stream error (RST_STREAM) where the RFC
/// allows refusing only the stream, else GOAWAY, after which the session is over. On top of the RFC,
/// cheap frames that cost this endpoint work are limited (rapid resets, SETTINGS and PING floods,
/// header blocks spread over endless CONTINUATION frames), as nghttp2 does, with ENHANCE_YOUR_CALM.
///
/// The hot path is one header block and one body each way per stream: a stream is one dictionary
/// entry holding its state and both windows, and nothing else is allocated per frame.
package struct HTTP2Session {
    package enum Role: Sendable {
        case client, server
    }

    package struct Configuration: Sendable {
        /// The receive window offered for each stream and, from the start, for the connection.
        package var receiveWindow = 1 << 20
        /// The most DATA one stream may carry, padding included, or `nil` for no limit. A stream's
        /// window is only widened up to it, so a peer that sends more breaks flow control
        /// (FLOW_CONTROL_ERROR on that stream) rather than growing the body a handler buffers.
        package var maximumStreamData: Int?
        /// SETTINGS_MAX_CONCURRENT_STREAMS this endpoint advertises and enforces on the peer's streams.
        package var maximumConcurrentStreams = 100
        /// SETTINGS_MAX_HEADER_LIST_SIZE, also the HPACK decoder's limit.
        package var maximumHeaderListSize = 1 << 16
        /// The largest header block (compressed, all CONTINUATION fragments together) accepted.
        package var maximumHeaderBlockSize = 1 << 17
        package var maximumContinuationFrames = 64
        /// How long the peer may take to acknowledge our SETTINGS (§6.5.3).
        package var settingsTimeout = TimeAmount.seconds(10)
        /// RST_STREAM frames from a client, at a server (nghttp2's defaults: 1,000 at once, 33 a second).
        package var resetLimit = HTTP2RateLimit(burst: 1_000, perSecond: 33)
        package var settingsLimit = HTTP2RateLimit(burst: 100, perSecond: 10)
        package var pingLimit = HTTP2RateLimit(burst: 100, perSecond: 10)
        /// SETTINGS and PING acknowledgements written but not yet taken by the caller: a peer that
        /// sends faster than it reads would otherwise grow them without bound (nghttp2: 1,000).
        package var maximumQueuedAcknowledgements = 1_000

        package init() {}
    }

    /// What the peer's SETTINGS frame set, among what a caller acts on.
    package struct PeerSettings: Sendable, Equatable {
        package var maximumConcurrentStreams: Int?
    }

    package enum Event {
        /// The peer's SETTINGS (not an acknowledgement); the first one makes the connection ready.
        case settings(PeerSettings)
        /// A header block on a stream: a request, an answer, a 1xx head or trailers.
        case headers(streamID: UInt32, HPACKHeaders, endStream: Bool)
        case data(streamID: UInt32, ByteBuffer, endStream: Bool)
        /// The peer reset the stream.
        case streamReset(streamID: UInt32, HTTP2Wire.ErrorCode)
        /// This session reset the stream for a stream error by the peer; RST_STREAM is in the output.
        case streamError(streamID: UInt32, HTTP2Wire.ErrorCode)
        case goAway(lastStreamID: UInt32, HTTP2Wire.ErrorCode)
        case pingAcknowledged(UInt64)
        /// The peer broke the protocol, or a limit: GOAWAY is in the output, the session is over.
        case connectionError(HTTP2Wire.ErrorCode)
    }

    private struct Stream {
        var sendWindow: Int
        var receiveWindow: Int
        /// DATA received on the stream so far, padding included.
        var received = 0
        /// END_STREAM written by this endpoint, or about to be with a body already queued.
        var localClosed = false
        var bodyQueued = false
        var remoteClosed = false
    }

    private struct Waiting {
        var streamID: UInt32
        var data: ByteBuffer
    }

    /// How a stream this session forgot came to be closed, which decides what a late frame means.
    private enum Closure: UInt64 {
        /// Both sides ended it: more DATA or HEADERS is a connection error STREAM_CLOSED.
        case ended = 1
        /// We reset or ignored it: the peer may have sent frames already, to be ignored (§5.1).
        case resetLocally = 2
        /// The peer reset it: anything more from it is a stream error STREAM_CLOSED (§5.1).
        case resetByPeer = 3
    }

    package let role: Role
    package let configuration: Configuration
    private var reader: HTTP2FrameReader
    private var decoder: HPACKDecoder
    private var encoder = HeaderBlockEncoder()
    /// Bytes to write, taken by the caller with ``takeOutput()``.
    private var output = Self.outputAllocator.buffer(capacity: 16_384)
    /// Where a header block is encoded before it is framed, kept between requests: a new
    /// buffer per request grew four or five times as the encoder wrote into it.
    private var headerBlock = Self.outputAllocator.buffer(capacity: 1_024)

    private var streams: [UInt32: Stream] = [:]
    private var waiting: [Waiting] = []
    /// The most recently closed streams, as `id << 2 | closure`, in a ring: a late frame on one of
    /// them gets the answer §5.1 gives for how it closed. Older ones are treated leniently.
    private var closed = [UInt64](repeating: 0, count: 512)
    private var closedCursor = 0
    private var highestPeerStreamID: UInt32 = 0
    package private(set) var nextLocalStreamID: UInt32
    private var openPeerStreams = 0
    private var peerStreamLimit: Int
    /// A lower limit announced but not yet acknowledged: until then the peer may use the old one.
    private var pendingPeerStreamLimit: Int?

    private var connectionSendWindow = HTTP2Wire.defaultWindowSize
    private var initialSendWindow = HTTP2Wire.defaultWindowSize
    /// The peer's SETTINGS_MAX_FRAME_SIZE: no frame sent may carry more.
    package private(set) var maximumFrameSize = HTTP2Wire.defaultMaximumFrameSize
    private var connectionReceiveWindow = HTTP2Wire.defaultWindowSize
    private var connectionUnacknowledged = 0

    /// When each SETTINGS frame not yet acknowledged was sent, oldest first.
    private var settingsSent: [NIODeadline] = []
    private var resetLimit: HTTP2RateLimit
    private var settingsLimit: HTTP2RateLimit
    private var pingLimit: HTTP2RateLimit
    private var queuedAcknowledgements = 0
    private var receivedSettings = false
    /// Set once the peer sent GOAWAY: no new streams from this end.
    package private(set) var peerGoAwayLastStreamID: UInt32?
    /// Set once this end sent GOAWAY: the peer's new streams above it are ignored, not processed.
    private var localGoAwayLastStreamID: UInt32?
    package private(set) var isClosed = false

    package init(role: Role, configuration: Configuration = Configuration()) {
        self.role = role
        self.configuration = configuration
        reader = HTTP2FrameReader(
            server: role == .server, maximumHeaderBlockSize: configuration.maximumHeaderBlockSize,
            maximumContinuationFrames: configuration.maximumContinuationFrames
        )
        decoder = HPACKDecoder(
            allocator: ByteBufferAllocator(), maxDynamicTableSize: 4_096,
            maxHeaderListSize: configuration.maximumHeaderListSize
        )
        nextLocalStreamID = role == .client ? 1 : 2
        peerStreamLimit = configuration.maximumConcurrentStreams
        resetLimit = configuration.resetLimit
        settingsLimit = configuration.settingsLimit
        pingLimit = configuration.pingLimit
    }

    // MARK: Output

    package var hasOutput: Bool { output.readableBytes > 0 || connectionUnacknowledged >= Self.connectionCreditStep }

    /// The bytes to write so far; acknowledgements in them no longer count as queued.
    ///
    /// The connection's receive credit goes out here, once per write rather than once per frame:
    /// credit counts from when the peer can know of it, so a peer that sends more than the window
    /// in one burst is caught rather than covered by credit it never saw.
    package mutating func takeOutput() -> ByteBuffer {
        queuedAcknowledgements = 0
        if connectionUnacknowledged >= Self.connectionCreditStep {
            HTTP2Wire.writeWindowUpdate(streamID: 0, increment: connectionUnacknowledged, to: &output)
            connectionReceiveWindow += connectionUnacknowledged
            connectionUnacknowledged = 0
        }
        defer { output = Self.outputAllocator.buffer(capacity: 16_384) }
        return output
    }

    /// A burst of answers fits without growing the buffer frame by frame.
    private static let outputAllocator = ByteBufferAllocator()

    /// Connection credit goes back in useful amounts rather than a WINDOW_UPDATE per frame.
    private static let connectionCreditStep = 16_384

    /// Bytes held for incomplete frames and header blocks, bounded by the frame size and the
    /// header block cap.
    package var bufferedBytes: Int { reader.bufferedBytes }

    // MARK: Starting

    /// The connection preface (§3.4): the client's magic, our SETTINGS, and the larger connection
    /// receive window. The SETTINGS timeout counts from `now`.
    package mutating func start(now: NIODeadline) {
        if role == .client { output.writeBytes(HTTP2Wire.clientPreface) }
        var settings: [(HTTP2Wire.Setting, Int)] = [
            (.maxConcurrentStreams, configuration.maximumConcurrentStreams),
            (.initialWindowSize, configuration.receiveWindow),
            (.maxHeaderListSize, configuration.maximumHeaderListSize),
        ]
        if role == .client { settings.insert((.enablePush, 0), at: 0) }
        HTTP2Wire.writeSettings(settings, to: &output)
        settingsSent.append(now)
        let increment = configuration.receiveWindow - HTTP2Wire.defaultWindowSize
        if increment > 0 {
            HTTP2Wire.writeWindowUpdate(streamID: 0, increment: increment, to: &output)
            connectionReceiveWindow += increment
        }
    }

    /// Announces a new SETTINGS_MAX_CONCURRENT_STREAMS. A higher limit applies at once (the peer
    /// cannot exceed what it has not heard of); a lower one once the peer acknowledges it.
    package mutating func setMaximumConcurrentStreams(_ limit: Int, now: NIODeadline) {
        guard !isClosed else { return }
        HTTP2Wire.writeSettings([(.maxConcurrentStreams, limit)], to: &output)
        settingsSent.append(now)
        if limit >= peerStreamLimit {
            peerStreamLimit = limit
            pendingPeerStreamLimit = nil
        } else {
            pendingPeerStreamLimit = limit
        }
    }

    // MARK: Sending

    /// Opens a stream (client): writes the header block, then as much of the body as the windows
    /// allow; the rest follows with WINDOW_UPDATE. Returns the stream's id.
    package mutating func sendRequest(_ headers: HeaderFields, body: ByteBuffer?) throws(HTTP2SessionSendError) -> UInt32 {
        guard !isClosed, peerGoAwayLastStreamID == nil else { throw .goingAway }
        guard nextLocalStreamID <= UInt32(Int32.max) else { throw .streamIDsExhausted }
        headerBlock.clear()
        encoder.encode(headers, to: &headerBlock)
        let streamID = nextLocalStreamID
        nextLocalStreamID += 2
        streams[streamID] = Stream(sendWindow: initialSendWindow, receiveWindow: configuration.receiveWindow)
        writeHeadersAndBody(headerBlock, body: body, streamID: streamID)
        return streamID
    }

    /// ``sendRequest(_:body:)`` with NIO's header list.
    package mutating func sendRequest(_ headers: HPACKHeaders, body: ByteBuffer?) throws(HTTP2SessionSendError) -> UInt32 {
        try sendRequest(HeaderFields(headers), body: body)
    }

    /// Answers a peer's stream (server). `false` when the stream is gone: reset, or the session over.
    @discardableResult
    package mutating func sendResponse(_ headers: HPACKHeaders, body: ByteBuffer?, streamID: UInt32) -> Bool {
        guard !isClosed, let stream = streams[streamID], !stream.localClosed else { return false }
        headerBlock.clear()
        encoder.encode(headers, to: &headerBlock)
        writeHeadersAndBody(headerBlock, body: body, streamID: streamID)
        return true
    }

    /// Answers a peer's stream with a header block encoded by the caller, which must use neither
    /// the dynamic table nor table size updates (only static references and literals without
    /// indexing), so this session's encoder stays in step with the peer's decoder. The simulator
    /// writes its answers so: NIO's encoder costs it two to six times as much CPU per answer.
    @discardableResult
    package mutating func sendResponse(headerBlock: ByteBuffer, body: ByteBuffer?, streamID: UInt32) -> Bool {
        guard !isClosed, let stream = streams[streamID], !stream.localClosed else { return false }
        writeHeadersAndBody(headerBlock, body: body, streamID: streamID)
        return true
    }

    private mutating func writeHeadersAndBody(_ block: ByteBuffer, body: ByteBuffer?, streamID: UInt32) {
        let body = body.flatMap { $0.readableBytes > 0 ? $0 : nil }
        HTTP2Wire.writeHeaders(block, streamID: streamID, endStream: body == nil, maximumFrameSize: maximumFrameSize, to: &output)
        if let body {
            streams[streamID]!.bodyQueued = true
            waiting.append(Waiting(streamID: streamID, data: body))
            sendWaiting()
        } else {
            localEnded(streamID)
        }
    }

    /// Resets a stream this end gives up on (a timeout); nothing if it is already closed.
    package mutating func resetStream(_ streamID: UInt32, code: HTTP2Wire.ErrorCode) {
        guard !isClosed, streams[streamID] != nil else { return }
        HTTP2Wire.writeResetStream(streamID, code: code, to: &output)
        remove(streamID, as: .resetLocally)
    }

    package mutating func sendPing(_ opaqueData: UInt64) {
        guard !isClosed else { return }
        HTTP2Wire.writeFrameHeader(length: 8, type: .ping, streamID: 0, to: &output)
        output.writeInteger(opaqueData)
    }

    /// Sends GOAWAY without ending the session: the peer's streams up to `lastStreamID` are still
    /// served, later ones ignored.
    package mutating func sendGoAway(lastStreamID: UInt32, code: HTTP2Wire.ErrorCode) {
        guard !isClosed else { return }
        localGoAwayLastStreamID = min(lastStreamID, localGoAwayLastStreamID ?? lastStreamID)
        HTTP2Wire.writeGoAway(lastStreamID: lastStreamID, code: code, to: &output)
    }

    // MARK: Receiving

    package mutating func receive(_ bytes: ByteBuffer) {
        guard !isClosed else { return }
        reader.append(bytes)
    }

    /// The next event from the bytes received, `nil` when more bytes are needed or the session is
    /// over. `now` drives the flood limits and the SETTINGS timeout.
    package mutating func nextEvent(now: NIODeadline) -> Event? {
        if let timeout = checkTimeouts(now: now) { return timeout }
        while !isClosed {
            let read: HTTP2FrameReader.Event?
            do { read = try reader.next() } catch { return connectionError(error) }
            guard let read else { return nil }
            let event: Event?
            switch read {
            case .headerBlock(let block):
                event = receivedSettings ? receiveHeaderBlock(block) : connectionError(.protocolError)
            case .frame(let frame): event = receiveFrame(frame, now: now)
            }
            if let event { return event }
        }
        return nil
    }

    /// SETTINGS not acknowledged in time end the connection with SETTINGS_TIMEOUT (§6.5.3).
    package mutating func checkTimeouts(now: NIODeadline) -> Event? {
        guard !isClosed, let oldest = settingsSent.first, now - oldest > configuration.settingsTimeout else { return nil }
        return connectionError(.settingsTimeout)
    }

    private mutating func receiveFrame(_ frame: HTTP2Wire.Frame, now: NIODeadline) -> Event? {
        // The peer's preface ends with SETTINGS (§3.4): anything else first is a protocol error.
        if !receivedSettings, frame.type != .settings || frame.has(HTTP2Wire.Flag.ack) {
            return connectionError(.protocolError)
        }
        switch frame.type {
        case .data: return receiveData(frame)
        case .rstStream: return receiveResetStream(frame, now: now)
        case .settings: return receiveSettings(frame, now: now)
        case .ping: return receivePing(frame, now: now)
        case .goAway: return receiveGoAway(frame)
        case .windowUpdate: return receiveWindowUpdate(frame)
        case .priority:
            guard frame.streamID != 0 else { return connectionError(.protocolError) }
            let dependency = frame.payload.getInteger(at: frame.payload.readerIndex, as: UInt32.self).map { $0 & 0x7FFF_FFFF }
            // A wrong length, or a stream depending on itself (§5.3.1), is a stream error.
            let code: HTTP2Wire.ErrorCode? =
                frame.payload.readableBytes != 5 ? .frameSizeError : dependency == frame.streamID ? .protocolError : nil
            guard let code else { return nil }  // priorities mean nothing here; allowed even on idle streams
            // RST_STREAM may not be sent on an idle stream of our own (§5.1).
            if isIdle(frame.streamID) && !isPeerInitiated(frame.streamID) { return connectionError(code) }
            return streamError(frame.streamID, code)
        case .pushPromise:
            // The client disabled push; a client never pushes.
            return connectionError(.protocolError)
        case .headers, .continuation:
            return nil  // header blocks come whole from the reader
        case nil:
            return nil  // unknown frame types are ignored (§4.1)
        }
    }

    // MARK: Streams

    private func isPeerInitiated(_ streamID: UInt32) -> Bool {
        (streamID % 2 == 1) == (role == .server)
    }

    /// Neither side has used the id yet.
    private func isIdle(_ streamID: UInt32) -> Bool {
        isPeerInitiated(streamID) ? streamID > highestPeerStreamID : streamID >= nextLocalStreamID
    }

    private func closure(of streamID: UInt32) -> Closure? {
        let id = UInt64(streamID)
        for entry in closed where entry >> 2 == id && entry != 0 {
            return Closure(rawValue: entry & 3)
        }
        return nil
    }

    private mutating func remove(_ streamID: UInt32, as closure: Closure) {
        guard streams.removeValue(forKey: streamID) != nil else { return }
        if isPeerInitiated(streamID) { openPeerStreams -= 1 }
        if !waiting.isEmpty { waiting.removeAll { $0.streamID == streamID } }
        remember(streamID, as: closure)
    }

    private mutating func remember(_ streamID: UInt32, as closure: Closure) {
        closed[closedCursor] = UInt64(streamID) << 2 | closure.rawValue
        closedCursor = closedCursor == closed.count - 1 ? 0 : closedCursor + 1
    }

    private mutating func localEnded(_ streamID: UInt32) {
        guard var stream = streams[streamID] else { return }
        if stream.remoteClosed { return remove(streamID, as: .ended) }
        stream.localClosed = true
        streams[streamID] = stream
    }

    /// DATA or HEADERS on a stream this session no longer holds (§5.1): `nil` to ignore it.
    private mutating func frameOnUnknownStream(_ streamID: UInt32, isHeaders: Bool) -> Event? {
        if isIdle(streamID) { return connectionError(.protocolError) }
        switch closure(of: streamID) {
        case .resetLocally: return nil
        case .resetByPeer:
            HTTP2Wire.writeResetStream(streamID, code: .streamClosed, to: &output)
            return nil
        case .ended: return connectionError(.streamClosed)
        case nil:
            // Closed too long ago to know how. Late frames are possible after our reset, so they
            // are ignored, except a header block on the peer's own ids: it would open a stream,
            // and the peer's ids only grow (§5.1.1).
            return isHeaders && isPeerInitiated(streamID) ? connectionError(.protocolError) : nil
        }
    }

    private mutating func receiveHeaderBlock(_ block: HTTP2FrameReader.HeaderBlock) -> Event? {
        var fragments = block.fragments
        // Every block is decoded, even for a stream then ignored: the HPACK table is per connection.
        let headers: HPACKHeaders
        do {
            headers = try decoder.decodeHeaders(from: &fragments)
        } catch {
            return connectionError(.compressionError)
        }
        let streamID = block.streamID
        if var stream = streams[streamID] {
            // Half-closed (remote): only WINDOW_UPDATE, PRIORITY and RST_STREAM may follow (§5.1).
            if stream.remoteClosed { return streamError(streamID, .streamClosed) }
            if block.endStream {
                if stream.localClosed {
                    remove(streamID, as: .ended)
                } else if role == .client && stream.bodyQueued {
                    // A complete answer before the whole body was sent (an early 413): no answer
                    // can follow, so the rest of the body would only use the windows.
                    HTTP2Wire.writeResetStream(streamID, code: .cancel, to: &output)
                    remove(streamID, as: .resetLocally)
                } else {
                    stream.remoteClosed = true
                    streams[streamID] = stream
                }
            }
            return .headers(streamID: streamID, headers, endStream: block.endStream)
        }
        if !isPeerInitiated(streamID) {
            // Our own id space: the peer cannot open a stream there (a client's even id at a server).
            return isIdle(streamID) ? connectionError(.protocolError) : frameOnUnknownStream(streamID, isHeaders: true)
        }
        // The client disabled push, so a server opens no streams.
        guard role == .server else { return connectionError(.protocolError) }
        guard streamID > highestPeerStreamID else { return frameOnUnknownStream(streamID, isHeaders: true) }
        highestPeerStreamID = streamID
        if let last = localGoAwayLastStreamID, streamID > last {
            remember(streamID, as: .resetLocally)  // not processed, as GOAWAY told the peer
            return nil
        }
        guard openPeerStreams < peerStreamLimit else {
            // Over the limit refuses only this stream (§5.1.2); the peer may retry it.
            HTTP2Wire.writeResetStream(streamID, code: .refusedStream, to: &output)
            remember(streamID, as: .resetLocally)
            return nil
        }
        openPeerStreams += 1
        streams[streamID] = Stream(
            sendWindow: initialSendWindow, receiveWindow: configuration.receiveWindow, remoteClosed: block.endStream
        )
        return .headers(streamID: streamID, headers, endStream: block.endStream)
    }

    private mutating func receiveData(_ frame: HTTP2Wire.Frame) -> Event? {
        guard frame.streamID != 0 else { return connectionError(.protocolError) }
        guard let data = HTTP2Wire.content(of: frame) else { return connectionError(.protocolError) }
        let streamID = frame.streamID
        // Flow control counts the whole payload, padding included, on every stream (§6.9).
        let length = frame.payload.readableBytes
        connectionReceiveWindow -= length
        guard connectionReceiveWindow >= 0 else { return connectionError(.flowControlError) }
        connectionUnacknowledged += length  // returned by takeOutput()
        guard var stream = streams[streamID] else {
            return frameOnUnknownStream(streamID, isHeaders: false)
        }
        if stream.remoteClosed { return streamError(streamID, .streamClosed) }
        stream.receiveWindow -= length
        stream.received += length
        guard stream.receiveWindow >= 0 else { return streamError(streamID, .flowControlError) }
        let endStream = frame.has(HTTP2Wire.Flag.endStream)
        if endStream {
            if stream.localClosed {
                remove(streamID, as: .ended)
                return .data(streamID: streamID, data, endStream: true)
            }
            if role == .client && stream.bodyQueued {
                // See receiveHeaderBlock: the answer is complete, stop sending the body.
                HTTP2Wire.writeResetStream(streamID, code: .cancel, to: &output)
                remove(streamID, as: .resetLocally)
                return .data(streamID: streamID, data, endStream: true)
            }
            stream.remoteClosed = true
        } else if stream.receiveWindow <= configuration.receiveWindow / 2 {
            // Half the window used: widen it again, so a body never waits and small ones cost nothing.
            var increment = configuration.receiveWindow - stream.receiveWindow
            if let limit = configuration.maximumStreamData {
                increment = min(increment, limit - stream.received - stream.receiveWindow)
            }
            if increment > 0 {
                HTTP2Wire.writeWindowUpdate(streamID: streamID, increment: increment, to: &output)
                stream.receiveWindow += increment
            }
        }
        streams[streamID] = stream
        return .data(streamID: streamID, data, endStream: endStream)
    }

    private mutating func receiveResetStream(_ frame: HTTP2Wire.Frame, now: NIODeadline) -> Event? {
        guard frame.streamID != 0 else { return connectionError(.protocolError) }
        var payload = frame.payload
        guard payload.readableBytes == 4, let raw = payload.readInteger(as: UInt32.self) else {
            return connectionError(.frameSizeError)
        }
        if isIdle(frame.streamID) { return connectionError(.protocolError) }
        // Counted whatever the stream: a client opening and resetting streams is the rapid-reset
        // attack. A server resetting a client's streams costs the client nothing (APNs refuses
        // streams in bursts when it lowers its limit), so only a server counts.
        if role == .server, !resetLimit.take(now: now) { return connectionError(.enhanceYourCalm) }
        guard streams[frame.streamID] != nil else { return nil }
        remove(frame.streamID, as: .resetByPeer)
        return .streamReset(streamID: frame.streamID, HTTP2Wire.ErrorCode(rawValue: raw) ?? .internalError)
    }

    private mutating func receiveSettings(_ frame: HTTP2Wire.Frame, now: NIODeadline) -> Event? {
        guard frame.streamID == 0 else { return connectionError(.protocolError) }
        if frame.has(HTTP2Wire.Flag.ack) {
            guard frame.payload.readableBytes == 0 else { return connectionError(.frameSizeError) }
            guard !settingsSent.isEmpty else { return connectionError(.protocolError) }
            settingsSent.removeFirst()
            if settingsSent.isEmpty, let pending = pendingPeerStreamLimit {
                peerStreamLimit = pending
                pendingPeerStreamLimit = nil
            }
            return nil
        }
        guard frame.payload.readableBytes % 6 == 0 else { return connectionError(.frameSizeError) }
        guard settingsLimit.take(now: now) else { return connectionError(.enhanceYourCalm) }
        receivedSettings = true
        var payload = frame.payload
        var settings = PeerSettings()
        while let identifier = payload.readInteger(as: UInt16.self), let raw = payload.readInteger(as: UInt32.self) {
            let value = Int(raw)
            switch HTTP2Wire.Setting(rawValue: identifier) {
            case .headerTableSize:
                // Our encoder's table may not be larger than the peer's decoder allows.
                encoder.setPeerTableSizeLimit(value)
            case .enablePush:
                // A server must not enable push towards itself (§6.5.2).
                guard value <= 1, role == .server || value == 0 else { return connectionError(.protocolError) }
            case .maxConcurrentStreams:
                settings.maximumConcurrentStreams = value
            case .initialWindowSize:
                guard value <= Int(Int32.max) else { return connectionError(.flowControlError) }
                let delta = value - initialSendWindow
                initialSendWindow = value
                if delta != 0 {
                    for streamID in streams.keys {
                        streams[streamID]!.sendWindow += delta
                        if streams[streamID]!.sendWindow > Int(Int32.max) { return connectionError(.flowControlError) }
                    }
                }
            case .maxFrameSize:
                guard (16_384...16_777_215).contains(value) else { return connectionError(.protocolError) }
                maximumFrameSize = value
            case .maxHeaderListSize, nil:
                break  // the peer's own limit is far above any APNs header block; unknown ones are ignored
            }
        }
        guard acknowledge() else { return connectionError(.enhanceYourCalm) }
        HTTP2Wire.writeSettingsAcknowledgement(to: &output)
        sendWaiting()
        return .settings(settings)
    }

    /// Counts an acknowledgement about to be queued; `false` when too many wait for the caller.
    private mutating func acknowledge() -> Bool {
        queuedAcknowledgements += 1
        return queuedAcknowledgements <= configuration.maximumQueuedAcknowledgements
    }

    private mutating func receivePing(_ frame: HTTP2Wire.Frame, now: NIODeadline) -> Event? {
        guard frame.streamID == 0 else { return connectionError(.protocolError) }
        guard frame.payload.readableBytes == 8 else { return connectionError(.frameSizeError) }
        if frame.has(HTTP2Wire.Flag.ack) {
            return .pingAcknowledged(frame.payload.getInteger(at: frame.payload.readerIndex, as: UInt64.self)!)
        }
        guard pingLimit.take(now: now), acknowledge() else { return connectionError(.enhanceYourCalm) }
        HTTP2Wire.writePingAcknowledgement(frame.payload, to: &output)
        return nil
    }

    private mutating func receiveGoAway(_ frame: HTTP2Wire.Frame) -> Event? {
        guard frame.streamID == 0 else { return connectionError(.protocolError) }
        var payload = frame.payload
        guard let last = payload.readInteger(as: UInt32.self), let raw = payload.readInteger(as: UInt32.self) else {
            return connectionError(.frameSizeError)
        }
        let lastStreamID = last & 0x7FFF_FFFF
        peerGoAwayLastStreamID = min(lastStreamID, peerGoAwayLastStreamID ?? lastStreamID)
        // Our streams above it were not processed: forget them; the caller retries them elsewhere.
        let unprocessed = streams.keys.filter { !isPeerInitiated($0) && $0 > lastStreamID }
        for streamID in unprocessed { remove(streamID, as: .resetLocally) }
        return .goAway(lastStreamID: lastStreamID, HTTP2Wire.ErrorCode(rawValue: raw) ?? .internalError)
    }

    private mutating func receiveWindowUpdate(_ frame: HTTP2Wire.Frame) -> Event? {
        var payload = frame.payload
        guard payload.readableBytes == 4, let raw = payload.readInteger(as: UInt32.self) else {
            return connectionError(.frameSizeError)
        }
        let increment = Int(raw & 0x7FFF_FFFF)
        if frame.streamID == 0 {
            guard increment > 0 else { return connectionError(.protocolError) }
            connectionSendWindow += increment
            guard connectionSendWindow <= Int(Int32.max) else { return connectionError(.flowControlError) }
        } else if var stream = streams[frame.streamID] {
            guard increment > 0 else { return streamError(frame.streamID, .protocolError) }
            stream.sendWindow += increment
            guard stream.sendWindow <= Int(Int32.max) else { return streamError(frame.streamID, .flowControlError) }
            streams[frame.streamID] = stream
        } else if isIdle(frame.streamID) {
            return connectionError(.protocolError)
        } else {
            return nil  // a stream already closed: WINDOW_UPDATE may cross its end (§5.1)
        }
        sendWaiting()
        return nil
    }

    /// Sends waiting bodies as far as the windows allow, oldest first.
    private mutating func sendWaiting() {
        var index = 0
        while index < waiting.count, connectionSendWindow > 0 {
            var pending = waiting[index]
            guard var stream = streams[pending.streamID] else {
                waiting.remove(at: index)
                continue
            }
            while pending.data.readableBytes > 0, stream.sendWindow > 0, connectionSendWindow > 0 {
                let length = min(pending.data.readableBytes, stream.sendWindow, connectionSendWindow, maximumFrameSize)
                let chunk = pending.data.readSlice(length: length)!
                stream.sendWindow -= length
                connectionSendWindow -= length
                HTTP2Wire.writeData(chunk, streamID: pending.streamID, endStream: pending.data.readableBytes == 0, to: &output)
            }
            streams[pending.streamID] = stream
            if pending.data.readableBytes == 0 {
                waiting.remove(at: index)
                localEnded(pending.streamID)
            } else {
                waiting[index] = pending
                index += 1
            }
        }
    }

    // MARK: Errors

    /// A stream error (§5.4.2): RST_STREAM, and the stream is forgotten; the connection goes on.
    private mutating func streamError(_ streamID: UInt32, _ code: HTTP2Wire.ErrorCode) -> Event? {
        HTTP2Wire.writeResetStream(streamID, code: code, to: &output)
        guard streams[streamID] != nil else {
            if isIdle(streamID) {
                highestPeerStreamID = streamID
                remember(streamID, as: .resetLocally)
            }
            return nil
        }
        remove(streamID, as: .resetLocally)
        return .streamError(streamID: streamID, code)
    }

    /// A connection error (§5.4.1): GOAWAY naming the last peer stream that may have been processed.
    private mutating func connectionError(_ code: HTTP2Wire.ErrorCode) -> Event? {
        guard !isClosed else { return nil }
        HTTP2Wire.writeGoAway(lastStreamID: highestPeerStreamID, code: code, to: &output)
        isClosed = true
        streams.removeAll()
        waiting.removeAll()
        return .connectionError(code)
    }
}

/// Why ``HTTP2Session/sendRequest(_:body:)`` opened no stream; nothing was written.
package enum HTTP2SessionSendError: Error {
    /// GOAWAY received or the session over.
    case goingAway
    case streamIDsExhausted
}
