import LivelineHTTP2
import NIOCore
import NIOHPACK
import Testing

/// One test per rule the session enforces, at the byte level: the peer's frames in, the session's
/// events and the RST_STREAM or GOAWAY it writes out.
@Suite("HTTP/2 session")
struct HTTP2SessionTests {
    typealias H = SessionHarness

    // MARK: Flow control (RFC 9113 §6.9.1)

    @Test("DATA past a stream's receive window is a stream error FLOW_CONTROL_ERROR; the connection goes on")
    func streamWindowOverrun() {
        var peer = H(role: .server) { $0.receiveWindow = 1_000 }
        #expect(peer.feed(peer.headers(1, endStream: false)) == ["headers 1"])
        #expect(peer.feed(H.data(1, length: 400, endStream: false)) == ["data 1 400"])
        #expect(peer.feed(H.data(1, length: 700, endStream: false)) == ["streamError 1 flowControlError"])
        #expect(peer.errorsWritten == ["rst 1 flowControlError"])
        #expect(peer.feed(peer.headers(3, endStream: true)) == ["headers 3 end"])
        #expect(!peer.session.isClosed)
    }

    @Test("a stream's window is widened only up to its data limit; DATA beyond is FLOW_CONTROL_ERROR", arguments: [nil, 1_000])
    func streamDataLimit(limit: Int?) {
        var peer = H(role: .server) {
            $0.receiveWindow = 1_000
            $0.maximumStreamData = limit
        }
        #expect(peer.feed(peer.headers(1, endStream: false)) == ["headers 1"])
        #expect(peer.feed(H.data(1, length: 600, endStream: false)) == ["data 1 600"])
        let widened = peer.written.contains { $0.type == .windowUpdate && $0.streamID == 1 }
        let events = peer.feed(H.data(1, length: 500, endStream: true))
        if limit == nil {
            #expect(widened)
            #expect(events == ["data 1 500 end"])
        } else {
            #expect(!widened)
            #expect(events == ["streamError 1 flowControlError"])
            #expect(peer.errorsWritten == ["rst 1 flowControlError"])
        }
    }

    @Test("DATA past the connection's receive window is a connection error FLOW_CONTROL_ERROR")
    func connectionWindowOverrun() {
        var peer = H(role: .server) { $0.receiveWindow = 65_535 }
        var burst = peer.headers(1, endStream: false) + peer.headers(3, endStream: false)
        for _ in 0..<3 { burst = burst + H.data(1, length: 16_384, endStream: false) }
        burst = burst + H.data(3, length: 16_384, endStream: false)  // 65,536 bytes with no credit returned
        let events = peer.feed(burst)
        #expect(events.last == "connectionError flowControlError")
        #expect(peer.errorsWritten == ["goaway flowControlError"])
        #expect(peer.session.isClosed)
    }

    @Test("the same bytes are accepted when the peer waits for the credit the session returned")
    func connectionCreditReturned() {
        var peer = H(role: .server) { $0.receiveWindow = 65_535 }
        var burst = peer.headers(1, endStream: false) + peer.headers(3, endStream: false)
        for _ in 0..<3 { burst = burst + H.data(1, length: 16_384, endStream: false) }
        peer.feed(burst)
        let update = peer.written.first { $0.type == .windowUpdate && $0.streamID == 0 }
        #expect(update.flatMap { $0.payload.getInteger(at: $0.payload.readerIndex, as: UInt32.self) } == 49_152)
        #expect(peer.feed(H.data(3, length: 16_384, endStream: true)) == ["data 3 16384 end"])
        #expect(peer.errorsWritten.isEmpty)
    }

    // MARK: Header blocks (CVE-2024-28182 class)

    @Test("a header block over the size cap across CONTINUATION frames ends the connection with ENHANCE_YOUR_CALM")
    func continuationSizeCap() {
        var peer = H(role: .server) { $0.maximumHeaderBlockSize = 1_000 }
        var bytes = H.frame(.headers, streamID: 1, payload: Array(repeating: 0, count: 100))
        for _ in 0..<3 { bytes = bytes + H.frame(.continuation, streamID: 1, payload: Array(repeating: 0, count: 500)) }
        #expect(peer.feed(bytes) == ["connectionError enhanceYourCalm"])
        #expect(peer.errorsWritten == ["goaway enhanceYourCalm"])
        #expect(peer.session.bufferedBytes <= 1_000 + 16_384 + 9)
    }

    @Test("endless empty CONTINUATION frames end the connection with ENHANCE_YOUR_CALM")
    func continuationCountCap() {
        var peer = H(role: .server) { $0.maximumContinuationFrames = 8 }
        var bytes = H.frame(.headers, streamID: 1, payload: [0x82])
        for _ in 0..<9 { bytes = bytes + H.frame(.continuation, streamID: 1, payload: []) }
        #expect(peer.feed(bytes) == ["connectionError enhanceYourCalm"])
        #expect(peer.errorsWritten == ["goaway enhanceYourCalm"])
    }

    // MARK: Stream states (§5.1)

    @Test("DATA, WINDOW_UPDATE or RST_STREAM on an idle stream is a connection error PROTOCOL_ERROR", arguments: [0, 1, 2])
    func idleStream(kind: Int) {
        var peer = H(role: .server)
        let frame: ByteBuffer
        switch kind {
        case 0: frame = H.data(5, length: 10, endStream: false)
        case 1: frame = H.frame(.windowUpdate, streamID: 5, payload: [0, 0, 1, 0])
        default: frame = H.reset(5)
        }
        #expect(peer.feed(frame) == ["connectionError protocolError"])
        #expect(peer.errorsWritten == ["goaway protocolError"])
    }

    @Test("an answer on a stream the client never opened is a connection error PROTOCOL_ERROR")
    func idleStreamAtClient() {
        var peer = H(role: .client)
        #expect(peer.feed(peer.headers(1, endStream: true, [(":status", "200")])) == ["connectionError protocolError"])
    }

    @Test("DATA on a stream both ends closed is a connection error STREAM_CLOSED")
    func closedStream() {
        var peer = H(role: .server)
        #expect(peer.feed(peer.headers(1, endStream: true)) == ["headers 1 end"])
        let answered = peer.session.sendResponse(HPACKHeaders([(":status", "200")]), body: nil, streamID: 1)
        #expect(answered)
        #expect(peer.feed(H.data(1, length: 5, endStream: true)) == ["connectionError streamClosed"])
        #expect(peer.errorsWritten == ["goaway streamClosed"])
    }

    @Test("DATA after the peer's own END_STREAM (half-closed remote) is a stream error STREAM_CLOSED")
    func halfClosedRemote() {
        var peer = H(role: .server)
        #expect(peer.feed(peer.headers(1, endStream: true)) == ["headers 1 end"])
        #expect(peer.feed(H.data(1, length: 5, endStream: false)) == ["streamError 1 streamClosed"])
        #expect(peer.errorsWritten == ["rst 1 streamClosed"])
        #expect(peer.feed(peer.headers(3, endStream: true)) == ["headers 3 end"])
    }

    @Test("DATA after the peer reset the stream is a stream error STREAM_CLOSED")
    func afterPeerReset() {
        var peer = H(role: .server)
        #expect(peer.feed(peer.headers(1, endStream: false)) == ["headers 1"])
        #expect(peer.feed(H.reset(1)) == ["reset 1 cancel"])
        #expect(peer.feed(H.data(1, length: 5, endStream: true)).isEmpty)
        #expect(peer.errorsWritten == ["rst 1 streamClosed"])
        #expect(!peer.session.isClosed)
    }

    @Test("frames already in flight when this end reset a stream are ignored (§5.1)")
    func afterLocalReset() {
        var peer = H(role: .client)
        let streamID = try! peer.session.sendRequest(HPACKHeaders([(":method", "POST")]), body: nil)
        peer.session.resetStream(streamID, code: .cancel)
        peer.collectOutput()
        #expect(peer.feed(peer.headers(streamID, endStream: false, [(":status", "200")]) + H.data(streamID, length: 9, endStream: true)).isEmpty)
        #expect(peer.errorsWritten == ["rst 1 cancel"])
        #expect(!peer.session.isClosed)
    }

    @Test("a new stream id not above the previous one is a connection error PROTOCOL_ERROR")
    func streamIDsOnlyGrow() {
        var peer = H(role: .server)
        #expect(peer.feed(peer.headers(5, endStream: true)) == ["headers 5 end"])
        #expect(peer.feed(peer.headers(3, endStream: true)) == ["connectionError protocolError"])
        #expect(peer.errorsWritten == ["goaway protocolError"])
    }

    @Test("an even stream id from a client is a connection error PROTOCOL_ERROR")
    func evenStreamAtServer() {
        var peer = H(role: .server)
        #expect(peer.feed(peer.headers(2, endStream: true)) == ["connectionError protocolError"])
    }

    @Test("PRIORITY of the wrong length or on a stream depending on itself is a stream error; otherwise ignored, even on idle streams")
    func priority() {
        var peer = H(role: .server)
        #expect(peer.feed(H.frame(.priority, streamID: 9, payload: [0, 0, 0, 1, 16])).isEmpty)
        #expect(peer.errorsWritten.isEmpty)
        #expect(peer.feed(peer.headers(1, endStream: false)) == ["headers 1"])
        #expect(peer.feed(H.frame(.priority, streamID: 1, payload: [0, 0, 0, 1, 16])) == ["streamError 1 protocolError"])
        #expect(peer.feed(H.frame(.priority, streamID: 3, payload: [0, 0, 0, 1])).isEmpty)
        #expect(peer.errorsWritten == ["rst 1 protocolError", "rst 3 frameSizeError"])
        #expect(peer.feed(peer.headers(11, endStream: true)) == ["headers 11 end"])
    }

    // MARK: Floods

    @Test("too many RST_STREAM in a window end the connection with ENHANCE_YOUR_CALM (rapid reset)")
    func rapidReset() {
        var peer = H(role: .server) { $0.resetLimit = HTTP2RateLimit(burst: 10, perSecond: 1) }
        var events: [String] = []
        for index in 0..<10 {
            let streamID = UInt32(2 * index + 1)
            events += peer.feed(peer.headers(streamID, endStream: false) + H.reset(streamID))
        }
        #expect(!events.contains { $0.hasPrefix("connectionError") })
        peer.now = peer.now + .seconds(3)  // three more allowed
        for index in 10..<13 {
            let streamID = UInt32(2 * index + 1)
            events += peer.feed(peer.headers(streamID, endStream: false) + H.reset(streamID))
        }
        #expect(!events.contains { $0.hasPrefix("connectionError") })
        #expect(peer.feed(peer.headers(27, endStream: false) + H.reset(27)) == ["headers 27", "connectionError enhanceYourCalm"])
        #expect(peer.errorsWritten == ["goaway enhanceYourCalm"])
    }

    @Test("a client does not count the server's resets: refusing streams in bursts is how APNs lowers its limit")
    func resetsAtClient() throws {
        var peer = H(role: .client) { $0.resetLimit = HTTP2RateLimit(burst: 2, perSecond: 1) }
        for _ in 0..<5 {
            let streamID = try peer.session.sendRequest(HPACKHeaders([(":method", "POST")]), body: nil)
            #expect(peer.feed(H.reset(streamID, code: .refusedStream)) == ["reset \(streamID) refusedStream"])
        }
        #expect(!peer.session.isClosed)
    }

    @Test("too many SETTINGS in a window end the connection with ENHANCE_YOUR_CALM")
    func settingsFlood() {
        var peer = H(role: .server) { $0.settingsLimit = HTTP2RateLimit(burst: 5, perSecond: 1) }
        var settings = ByteBuffer()
        HTTP2Wire.writeSettings([(.initialWindowSize, 100_000)], to: &settings)
        for _ in 0..<4 { #expect(peer.feed(settings) == ["settings"]) }  // the opening SETTINGS was the fifth
        #expect(peer.feed(settings) == ["connectionError enhanceYourCalm"])
        #expect(peer.errorsWritten == ["goaway enhanceYourCalm"])
    }

    @Test("too many PINGs in a window end the connection with ENHANCE_YOUR_CALM")
    func pingFlood() {
        var peer = H(role: .client) { $0.pingLimit = HTTP2RateLimit(burst: 5, perSecond: 1) }
        for value in 0..<5 { #expect(peer.feed(H.ping(UInt64(value))).isEmpty) }
        #expect(peer.written.filter { $0.type == .ping && $0.has(HTTP2Wire.Flag.ack) }.count == 5)
        #expect(peer.feed(H.ping(5)) == ["connectionError enhanceYourCalm"])
        #expect(peer.errorsWritten == ["goaway enhanceYourCalm"])
    }

    @Test("too many acknowledgements waiting for the caller to write end the connection with ENHANCE_YOUR_CALM")
    func acknowledgementsQueued() {
        var peer = H(role: .server) { $0.maximumQueuedAcknowledgements = 10 }
        var pings = ByteBuffer()
        for value in 0..<10 { pings = pings + H.ping(UInt64(value)) }
        #expect(peer.feed(pings).isEmpty)  // taken after the burst: the count starts again
        #expect(peer.feed(pings).isEmpty)
        #expect(peer.feed(pings + H.ping(10)) == ["connectionError enhanceYourCalm"])
    }

    // MARK: SETTINGS acknowledgement (§6.5.3)

    @Test("SETTINGS not acknowledged in time end the connection with SETTINGS_TIMEOUT")
    func settingsTimeout() {
        let start = NIODeadline.uptimeNanoseconds(5_000_000_000)
        var configuration = HTTP2Session.Configuration()
        configuration.settingsTimeout = .seconds(10)
        var session = HTTP2Session(role: .server, configuration: configuration)
        session.start(now: start)
        var opening = ByteBuffer(bytes: HTTP2Wire.clientPreface)
        HTTP2Wire.writeSettings([], to: &opening)
        session.receive(opening)
        #expect(session.nextEvent(now: start).map(H.describe) == "settings")
        #expect(session.checkTimeouts(now: start + .seconds(9)) == nil)
        #expect(session.checkTimeouts(now: start + .seconds(11)).map(H.describe) == "connectionError settingsTimeout")
        var output = session.takeOutput()
        var frames: [HTTP2Wire.Frame] = []
        while case .frame(let frame) = HTTP2Wire.readFrame(from: &output, maximumLength: 1 << 24) { frames.append(frame) }
        #expect(frames.last?.type == .goAway)
        #expect(frames.last.flatMap { $0.payload.getInteger(at: $0.payload.readerIndex + 4, as: UInt32.self) } == 0x4)
    }

    @Test("acknowledged SETTINGS never time out; a later SETTINGS is timed on its own")
    func settingsAcknowledged() {
        var peer = H(role: .server)
        #expect(peer.session.checkTimeouts(now: peer.now + .seconds(3_600)) == nil)
        peer.session.setMaximumConcurrentStreams(500, now: peer.now)
        #expect(peer.session.checkTimeouts(now: peer.now + .seconds(5)) == nil)
        #expect(peer.session.checkTimeouts(now: peer.now + .seconds(11)).map(H.describe) == "connectionError settingsTimeout")
    }

    // MARK: Refusing a stream

    @Test("a stream over the concurrency limit is refused alone: REFUSED_STREAM, and the connection stays usable")
    func refusedStream() {
        var peer = H(role: .server) { $0.maximumConcurrentStreams = 1 }
        #expect(peer.feed(peer.headers(1, endStream: false)) == ["headers 1"])
        #expect(peer.feed(peer.headers(3, endStream: false) + H.data(3, length: 50, endStream: true)).isEmpty)
        #expect(peer.errorsWritten == ["rst 3 refusedStream"])
        #expect(peer.feed(H.data(1, length: 10, endStream: true)) == ["data 1 10 end"])
        let answered = peer.session.sendResponse(HPACKHeaders([(":status", "200")]), body: nil, streamID: 1)
        #expect(answered)
        #expect(peer.feed(peer.headers(5, endStream: true)) == ["headers 5 end"])
        #expect(!peer.session.isClosed)
        peer.session.setMaximumConcurrentStreams(2, now: peer.now)
        #expect(peer.feed(peer.headers(7, endStream: true)) == ["headers 7 end"])
    }

    @Test("a client sees REFUSED_STREAM as a reset of that stream only, and opens the next")
    func refusedStreamAtClient() throws {
        var peer = H(role: .client)
        let first = try peer.session.sendRequest(HPACKHeaders([(":method", "POST")]), body: ByteBuffer(string: "{}"))
        #expect(peer.feed(H.reset(first, code: .refusedStream)) == ["reset 1 refusedStream"])
        let second = try peer.session.sendRequest(HPACKHeaders([(":method", "POST")]), body: nil)
        #expect(second == 3)
        #expect(peer.feed(peer.headers(second, endStream: true, [(":status", "200")])) == ["headers 3 end"])
    }

    // MARK: Sending

    @Test("a body larger than the peer's windows waits for WINDOW_UPDATE, in frames no larger than allowed")
    func flowControlledSending() throws {
        var peer = H(role: .client)
        let streamID = try peer.session.sendRequest(HPACKHeaders([(":method", "POST")]), body: ByteBuffer(repeating: 1, count: 70_000))
        peer.collectOutput()
        var sent = peer.written.filter { $0.type == .data }.map(\.payload.readableBytes)
        #expect(sent.reduce(0, +) == 65_535)
        #expect(sent.allSatisfy { $0 <= 16_384 })
        var updates = ByteBuffer()
        HTTP2Wire.writeWindowUpdate(streamID: 0, increment: 10_000, to: &updates)
        HTTP2Wire.writeWindowUpdate(streamID: streamID, increment: 10_000, to: &updates)
        peer.written.removeAll()
        peer.feed(updates)
        sent = peer.written.filter { $0.type == .data }.map(\.payload.readableBytes)
        #expect(sent == [4_465])
        #expect(peer.written.last?.has(HTTP2Wire.Flag.endStream) == true)
    }

    @Test("a complete answer before the whole body was sent stops the body and resets the stream")
    func earlyAnswer() throws {
        var peer = H(role: .client)
        let streamID = try peer.session.sendRequest(HPACKHeaders([(":method", "POST")]), body: ByteBuffer(repeating: 1, count: 70_000))
        peer.collectOutput()
        peer.written.removeAll()
        #expect(peer.feed(peer.headers(streamID, endStream: true, [(":status", "413")])) == ["headers 1 end"])
        #expect(peer.errorsWritten == ["rst 1 cancel"])
        var updates = ByteBuffer()
        HTTP2Wire.writeWindowUpdate(streamID: 0, increment: 10_000, to: &updates)
        peer.feed(updates)
        #expect(!peer.written.contains { $0.type == .data })
    }
}
