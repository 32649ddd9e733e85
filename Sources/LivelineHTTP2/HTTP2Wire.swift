import NIOCore

// Tests: Tests/LivelineHTTP2Tests/HTTP2SessionTests.swift, Tests/LivelineHTTP2Tests/HTTP2FuzzTests.swift, Tests/LivelineAPNsTests/SimulatorWireTests.swift

/// The HTTP/2 wire format (RFC 9113) under ``HTTP2Session``, which both of Liveline's connection
/// handlers run on (the APNs client's and the simulator's). Reading frames, and writing them.
///
/// Why not NIO's `NIOHTTP2Handler`: per request it runs a stream state machine, validates every
/// header field and Huffman-codes values, which together cost more CPU than the rest of a push's
/// HTTP/2 handling. APNs needs one request and one answer per stream and nothing else HTTP/2 offers,
/// so the session speaks the frames directly, and keeps its per-stream state to one dictionary
/// entry. HPACK decoding stays NIO's (`NIOHPACK`); encoding is ``HeaderBlockEncoder``.
package enum HTTP2Wire {
    package static let clientPreface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    package static let frameHeaderLength = 9
    /// SETTINGS_MAX_FRAME_SIZE unless a peer raises it; Liveline's endpoints never do.
    package static let defaultMaximumFrameSize = 16_384
    /// The flow-control window every connection and stream starts with.
    package static let defaultWindowSize = 65_535

    package enum FrameType: UInt8 {
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

    package enum Flag {
        package static let endStream: UInt8 = 0x1
        package static let ack: UInt8 = 0x1
        package static let endHeaders: UInt8 = 0x4
        package static let padded: UInt8 = 0x8
        package static let priority: UInt8 = 0x20
    }

    /// RFC 9113 §7. An unknown code is treated as INTERNAL_ERROR, as the RFC allows.
    package enum ErrorCode: UInt32, Error {
        case noError = 0x0
        case protocolError = 0x1
        case internalError = 0x2
        case flowControlError = 0x3
        case settingsTimeout = 0x4
        case streamClosed = 0x5
        case frameSizeError = 0x6
        case refusedStream = 0x7
        case cancel = 0x8
        case compressionError = 0x9
        case connectError = 0xA
        case enhanceYourCalm = 0xB
        case inadequateSecurity = 0xC
        case http11Required = 0xD
    }

    package enum Setting: UInt16 {
        case headerTableSize = 0x1
        case enablePush = 0x2
        case maxConcurrentStreams = 0x3
        case initialWindowSize = 0x4
        case maxFrameSize = 0x5
        case maxHeaderListSize = 0x6
    }

    package struct Frame {
        /// Unknown types are kept as `nil` so they can be ignored, as RFC 9113 §4.1 requires.
        package var type: FrameType?
        package var flags: UInt8
        package var streamID: UInt32
        package var payload: ByteBuffer

        package func has(_ flag: UInt8) -> Bool { flags & flag != 0 }
    }

    package enum ReadResult {
        case frame(Frame)
        case needMoreBytes
        /// Longer than the receiver's SETTINGS_MAX_FRAME_SIZE: a connection error.
        case tooLarge
    }

    /// Takes one whole frame off the front of `buffer`.
    package static func readFrame(from buffer: inout ByteBuffer, maximumLength: Int) -> ReadResult {
        let start = buffer.readerIndex
        guard let lengthAndType = buffer.getInteger(at: start, as: UInt32.self),
            let flags = buffer.getInteger(at: start + 4, as: UInt8.self),
            let streamID = buffer.getInteger(at: start + 5, as: UInt32.self)
        else { return .needMoreBytes }
        let length = Int(lengthAndType >> 8)
        guard length <= maximumLength else { return .tooLarge }
        guard buffer.readableBytes >= frameHeaderLength + length else { return .needMoreBytes }
        buffer.moveReaderIndex(forwardBy: frameHeaderLength)
        return .frame(
            Frame(
                type: FrameType(rawValue: UInt8(truncatingIfNeeded: lengthAndType)), flags: flags,
                streamID: streamID & 0x7FFF_FFFF, payload: buffer.readSlice(length: length)!
            )
        )
    }

    /// Removes padding (and the priority fields of HEADERS) from a DATA or HEADERS payload, leaving
    /// the content; `nil` when the padding is longer than the frame (a protocol error).
    package static func content(of frame: Frame) -> ByteBuffer? {
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

    package static func writeFrameHeader(length: Int, type: FrameType, flags: UInt8 = 0, streamID: UInt32, to buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(truncatingIfNeeded: length >> 16))
        buffer.writeInteger(UInt16(truncatingIfNeeded: length))
        buffer.writeInteger(type.rawValue)
        buffer.writeInteger(flags)
        buffer.writeInteger(streamID)
    }

    package static func writeSettings(_ settings: [(Setting, Int)], to buffer: inout ByteBuffer) {
        writeFrameHeader(length: settings.count * 6, type: .settings, streamID: 0, to: &buffer)
        for (setting, value) in settings {
            buffer.writeInteger(setting.rawValue)
            buffer.writeInteger(UInt32(value))
        }
    }

    package static func writeSettingsAcknowledgement(to buffer: inout ByteBuffer) {
        writeFrameHeader(length: 0, type: .settings, flags: Flag.ack, streamID: 0, to: &buffer)
    }

    package static func writePingAcknowledgement(_ opaqueData: ByteBuffer, to buffer: inout ByteBuffer) {
        var opaqueData = opaqueData
        writeFrameHeader(length: 8, type: .ping, flags: Flag.ack, streamID: 0, to: &buffer)
        buffer.writeBuffer(&opaqueData)
    }

    package static func writeWindowUpdate(streamID: UInt32, increment: Int, to buffer: inout ByteBuffer) {
        writeFrameHeader(length: 4, type: .windowUpdate, streamID: streamID, to: &buffer)
        buffer.writeInteger(UInt32(increment))
    }

    package static func writeResetStream(_ streamID: UInt32, code: ErrorCode, to buffer: inout ByteBuffer) {
        writeFrameHeader(length: 4, type: .rstStream, streamID: streamID, to: &buffer)
        buffer.writeInteger(code.rawValue)
    }

    package static func writeGoAway(lastStreamID: UInt32, code: ErrorCode, to buffer: inout ByteBuffer) {
        writeFrameHeader(length: 8, type: .goAway, streamID: 0, to: &buffer)
        buffer.writeInteger(lastStreamID)
        buffer.writeInteger(code.rawValue)
    }

    /// Writes a header block as HEADERS, plus CONTINUATION frames if it exceeds `maximumFrameSize`.
    package static func writeHeaders(
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

    package static func writeData(_ data: ByteBuffer, streamID: UInt32, endStream: Bool, to buffer: inout ByteBuffer) {
        var data = data
        writeFrameHeader(length: data.readableBytes, type: .data, flags: endStream ? Flag.endStream : 0, streamID: streamID, to: &buffer)
        buffer.writeBuffer(&data)
    }
}
