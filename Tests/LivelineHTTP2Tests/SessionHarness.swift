import LivelineHTTP2
import NIOCore
import NIOHPACK

/// A session under test and the peer's side of the wire, written frame by frame: no sockets, and
/// time is a value the test moves.
struct SessionHarness {
    var session: HTTP2Session
    var now = NIODeadline.uptimeNanoseconds(1_000_000_000)
    /// The peer's HPACK encoder: its blocks must follow the connection's table.
    var encoder = HPACKEncoder(allocator: ByteBufferAllocator(), useHuffmanEncoding: false)
    /// Frames the session wrote, in order, since the test last looked.
    var written: [HTTP2Wire.Frame] = []

    /// A started session whose peer sent its preface and SETTINGS, and acknowledged ours.
    init(role: HTTP2Session.Role, configure: (inout HTTP2Session.Configuration) -> Void = { _ in }) {
        var configuration = HTTP2Session.Configuration()
        configure(&configuration)
        session = HTTP2Session(role: role, configuration: configuration)
        session.start(now: now)
        var opening = ByteBuffer()
        if role == .server { opening.writeBytes(HTTP2Wire.clientPreface) }
        HTTP2Wire.writeSettings([], to: &opening)
        HTTP2Wire.writeSettingsAcknowledgement(to: &opening)
        let events = feed(opening)
        precondition(events == ["settings"], "opening: \(events)")
        written.removeAll()
    }

    /// Hands bytes to the session and returns its events, described; `written` gets its output.
    @discardableResult
    mutating func feed(_ bytes: ByteBuffer) -> [String] {
        session.receive(bytes)
        var events: [String] = []
        while let event = session.nextEvent(now: now) {
            events.append(Self.describe(event))
        }
        collectOutput()
        return events
    }

    mutating func collectOutput() {
        var output = session.takeOutput()
        while case .frame(let frame) = HTTP2Wire.readFrame(from: &output, maximumLength: 1 << 24) {
            written.append(frame)
        }
    }

    /// The RST_STREAM or GOAWAY frames written, as "rst <stream> <code>" and "goaway <code>".
    var errorsWritten: [String] {
        written.compactMap { frame in
            switch frame.type {
            case .rstStream:
                let code = frame.payload.getInteger(at: frame.payload.readerIndex, as: UInt32.self)!
                return "rst \(frame.streamID) \(HTTP2Wire.ErrorCode(rawValue: code).map { "\($0)" } ?? "\(code)")"
            case .goAway:
                let code = frame.payload.getInteger(at: frame.payload.readerIndex + 4, as: UInt32.self)!
                return "goaway \(HTTP2Wire.ErrorCode(rawValue: code).map { "\($0)" } ?? "\(code)")"
            default:
                return nil
            }
        }
    }

    static func describe(_ event: HTTP2Session.Event) -> String {
        switch event {
        case .settings: return "settings"
        case .headers(let streamID, _, let endStream): return "headers \(streamID)\(endStream ? " end" : "")"
        case .data(let streamID, let data, let endStream): return "data \(streamID) \(data.readableBytes)\(endStream ? " end" : "")"
        case .streamReset(let streamID, let code): return "reset \(streamID) \(code)"
        case .streamError(let streamID, let code): return "streamError \(streamID) \(code)"
        case .goAway(let lastStreamID, let code): return "goaway \(lastStreamID) \(code)"
        case .pingAcknowledged(let data): return "pong \(data)"
        case .connectionError(let code): return "connectionError \(code)"
        }
    }

    // MARK: The peer's frames

    mutating func headers(_ streamID: UInt32, endStream: Bool, _ fields: [(String, String)]? = nil) -> ByteBuffer {
        let fields = fields ?? [(":method", "POST"), (":scheme", "https"), (":path", "/3/device/ab"), (":authority", "x")]
        var block = ByteBuffer()
        try! encoder.encode(headers: HPACKHeaders(fields), to: &block)
        var bytes = ByteBuffer()
        HTTP2Wire.writeHeaders(block, streamID: streamID, endStream: endStream, maximumFrameSize: 16_384, to: &bytes)
        return bytes
    }

    static func data(_ streamID: UInt32, length: Int, endStream: Bool) -> ByteBuffer {
        var bytes = ByteBuffer()
        HTTP2Wire.writeData(ByteBuffer(repeating: 0x61, count: length), streamID: streamID, endStream: endStream, to: &bytes)
        return bytes
    }

    static func frame(_ type: HTTP2Wire.FrameType, flags: UInt8 = 0, streamID: UInt32, payload: [UInt8]) -> ByteBuffer {
        var bytes = ByteBuffer()
        HTTP2Wire.writeFrameHeader(length: payload.count, type: type, flags: flags, streamID: streamID, to: &bytes)
        bytes.writeBytes(payload)
        return bytes
    }

    static func reset(_ streamID: UInt32, code: HTTP2Wire.ErrorCode = .cancel) -> ByteBuffer {
        var bytes = ByteBuffer()
        HTTP2Wire.writeResetStream(streamID, code: code, to: &bytes)
        return bytes
    }

    static func ping(_ value: UInt64) -> ByteBuffer {
        var bytes = ByteBuffer()
        HTTP2Wire.writeFrameHeader(length: 8, type: .ping, streamID: 0, to: &bytes)
        bytes.writeInteger(value)
        return bytes
    }
}

extension ByteBuffer {
    static func + (lhs: ByteBuffer, rhs: ByteBuffer) -> ByteBuffer {
        var joined = lhs
        var rhs = rhs
        joined.writeBuffer(&rhs)
        return joined
    }
}
