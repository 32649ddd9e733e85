import NIOCore

/// The pieces of the HTTP/2 wire format (RFC 9113) that the simulator's server connection needs:
/// reading frames, writing the frames a server sends, and response header blocks.
enum HTTP2Wire {
    static let clientPreface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    static let frameHeaderLength = 9
    /// SETTINGS_MAX_FRAME_SIZE before (and unless) a peer raises it; the simulator never does.
    static let defaultMaximumFrameSize = 16_384
    /// The flow-control window every connection and stream starts with.
    static let defaultWindowSize = 65_535

    enum FrameType: UInt8 {
        case data = 0x0
        case headers = 0x1
        case priority = 0x2
        case rstStream = 0x3
        case settings = 0x4
        case pushPromise = 0x5
        case ping = 0x6
        case goAway = 0x7
        case windowUpdate = 0x8
        case continuation = 0x9
    }

    enum Flag {
        static let endStream: UInt8 = 0x1
        static let ack: UInt8 = 0x1
        static let endHeaders: UInt8 = 0x4
        static let padded: UInt8 = 0x8
        static let priority: UInt8 = 0x20
    }

    enum ErrorCode: UInt32 {
        case noError = 0x0
        case protocolError = 0x1
        case flowControlError = 0x3
        case frameSizeError = 0x6
        case refusedStream = 0x7
        case compressionError = 0x9
    }

    enum Setting: UInt16 {
        case headerTableSize = 0x1
        case maxConcurrentStreams = 0x3
        case initialWindowSize = 0x4
        case maxFrameSize = 0x5
        case maxHeaderListSize = 0x6
    }

    struct Frame {
        /// Unknown types are kept as `nil` so they can be ignored, as RFC 9113 §4.1 requires.
        var type: FrameType?
        var flags: UInt8
        var streamID: UInt32
        var payload: ByteBuffer

        func has(_ flag: UInt8) -> Bool { flags & flag != 0 }
    }

    enum ReadResult {
        case frame(Frame)
        case needMoreBytes
        /// Longer than the receiver's SETTINGS_MAX_FRAME_SIZE: a connection error.
        case tooLarge
    }

    /// Takes one whole frame off the front of `buffer`.
    static func readFrame(from buffer: inout ByteBuffer, maximumLength: Int) -> ReadResult {
        guard let header = buffer.getBytes(at: buffer.readerIndex, length: frameHeaderLength) else { return .needMoreBytes }
        let length = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
        guard length <= maximumLength else { return .tooLarge }
        guard buffer.readableBytes >= frameHeaderLength + length else { return .needMoreBytes }
        buffer.moveReaderIndex(forwardBy: frameHeaderLength)
        let streamID = (UInt32(header[5]) << 24 | UInt32(header[6]) << 16 | UInt32(header[7]) << 8 | UInt32(header[8])) & 0x7FFF_FFFF
        return .frame(Frame(type: FrameType(rawValue: header[3]), flags: header[4], streamID: streamID, payload: buffer.readSlice(length: length)!))
    }

    /// Removes padding (and the priority fields of HEADERS) from a DATA or HEADERS payload, leaving
    /// the content; `nil` when the padding is longer than the frame (a protocol error).
    static func content(of frame: Frame) -> ByteBuffer? {
        var payload = frame.payload
        var padding = 0
        if frame.has(Flag.padded) {
            guard let length = payload.readInteger(as: UInt8.self) else { return nil }
            padding = Int(length)
        }
        if frame.type == .headers, frame.has(Flag.priority) {
            guard payload.readSlice(length: 5) != nil else { return nil }
        }
        guard padding <= payload.readableBytes else { return nil }
        return payload.readSlice(length: payload.readableBytes - padding)
    }

    // MARK: Writing

    static func writeFrameHeader(length: Int, type: FrameType, flags: UInt8 = 0, streamID: UInt32, to buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(truncatingIfNeeded: length >> 16))
        buffer.writeInteger(UInt16(truncatingIfNeeded: length))
        buffer.writeInteger(type.rawValue)
        buffer.writeInteger(flags)
        buffer.writeInteger(streamID)
    }

    static func writeSettings(_ settings: [(Setting, Int)], to buffer: inout ByteBuffer) {
        writeFrameHeader(length: settings.count * 6, type: .settings, streamID: 0, to: &buffer)
        for (setting, value) in settings {
            buffer.writeInteger(setting.rawValue)
            buffer.writeInteger(UInt32(value))
        }
    }

    static func writeSettingsAcknowledgement(to buffer: inout ByteBuffer) {
        writeFrameHeader(length: 0, type: .settings, flags: Flag.ack, streamID: 0, to: &buffer)
    }

    static func writePingAcknowledgement(_ opaqueData: ByteBuffer, to buffer: inout ByteBuffer) {
        var opaqueData = opaqueData
        writeFrameHeader(length: 8, type: .ping, flags: Flag.ack, streamID: 0, to: &buffer)
        buffer.writeBuffer(&opaqueData)
    }

    static func writeWindowUpdate(streamID: UInt32, increment: Int, to buffer: inout ByteBuffer) {
        writeFrameHeader(length: 4, type: .windowUpdate, streamID: streamID, to: &buffer)
        buffer.writeInteger(UInt32(increment))
    }

    static func writeResetStream(_ streamID: UInt32, code: ErrorCode, to buffer: inout ByteBuffer) {
        writeFrameHeader(length: 4, type: .rstStream, streamID: streamID, to: &buffer)
        buffer.writeInteger(code.rawValue)
    }

    static func writeGoAway(lastStreamID: UInt32, code: ErrorCode, to buffer: inout ByteBuffer) {
        writeFrameHeader(length: 8, type: .goAway, streamID: 0, to: &buffer)
        buffer.writeInteger(lastStreamID)
        buffer.writeInteger(code.rawValue)
    }

    /// Writes a header block as HEADERS, plus CONTINUATION frames if it exceeds `maximumFrameSize`.
    static func writeHeaders(
        _ block: ByteBuffer, streamID: UInt32, endStream: Bool, maximumFrameSize: Int, to buffer: inout ByteBuffer
    ) {
        var block = block
        var type = FrameType.headers
        repeat {
            var fragment = block.readSlice(length: min(block.readableBytes, maximumFrameSize))!
            var flags: UInt8 = block.readableBytes == 0 ? Flag.endHeaders : 0
            if type == .headers, endStream { flags |= Flag.endStream }
            writeFrameHeader(length: fragment.readableBytes, type: type, flags: flags, streamID: streamID, to: &buffer)
            buffer.writeBuffer(&fragment)
            type = .continuation
        } while block.readableBytes > 0
    }

    static func writeData(_ data: ByteBuffer, streamID: UInt32, endStream: Bool, to buffer: inout ByteBuffer) {
        var data = data
        writeFrameHeader(length: data.readableBytes, type: .data, flags: endStream ? Flag.endStream : 0, streamID: streamID, to: &buffer)
        buffer.writeBuffer(&data)
    }

    // MARK: Response header blocks (RFC 7541)

    /// Encodes a response's fields as HPACK literals without indexing and without Huffman coding.
    ///
    /// That never touches the dynamic table, so it is right whatever table size the client chose, and
    /// it costs a copy per field where NIO's encoder Huffman-codes every unique value (the `apns-id`).
    /// Names must already be lower case.
    static func writeResponseHeaderBlock(status: Int, headers: [(String, String)], to buffer: inout ByteBuffer) {
        if status == 200 {
            buffer.writeInteger(UInt8(0x88))  // static table entry 8, ":status: 200"
        } else {
            writeInteger(8, prefixBits: 4, flags: 0x00, to: &buffer)  // literal, name from static entry 8
            writeString(String(status), to: &buffer)
        }
        for (name, value) in headers {
            buffer.writeInteger(UInt8(0x00))  // literal without indexing, new name
            writeString(name, to: &buffer)
            writeString(value, to: &buffer)
        }
    }

    private static func writeString(_ string: String, to buffer: inout ByteBuffer) {
        writeInteger(string.utf8.count, prefixBits: 7, flags: 0x00, to: &buffer)  // H = 0: not Huffman-coded
        buffer.writeString(string)
    }

    /// RFC 7541 §5.1 integer with an N-bit prefix.
    static func writeInteger(_ value: Int, prefixBits: Int, flags: UInt8, to buffer: inout ByteBuffer) {
        let limit = (1 << prefixBits) - 1
        guard value >= limit else {
            buffer.writeInteger(flags | UInt8(value))
            return
        }
        buffer.writeInteger(flags | UInt8(limit))
        var rest = value - limit
        while rest >= 128 {
            buffer.writeInteger(UInt8(rest & 0x7F | 0x80))
            rest >>= 7
        }
        buffer.writeInteger(UInt8(rest))
    }
}
