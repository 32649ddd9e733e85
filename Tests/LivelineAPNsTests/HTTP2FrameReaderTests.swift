import LivelineHTTP2
import NIOCore
import Testing

/// Reads arrive cut anywhere: inside a frame header, a payload, or a header block spread over
/// CONTINUATION frames. The reader must give the same events however the bytes are cut.
@Suite("HTTP/2 frame reader")
struct HTTP2FrameReaderTests {
    /// A client's opening: preface, SETTINGS, a request whose header block spans HEADERS and
    /// CONTINUATION, its body in two DATA frames, and a PING.
    static func clientBytes() -> ByteBuffer {
        var bytes = ByteBuffer(bytes: HTTP2Wire.clientPreface)
        HTTP2Wire.writeSettings([(.initialWindowSize, 1 << 20)], to: &bytes)
        HTTP2Wire.writeHeaders(ByteBuffer(bytes: Array(0..<40)), streamID: 1, endStream: false, maximumFrameSize: 16, to: &bytes)
        HTTP2Wire.writeFrameHeader(length: 300, type: .data, streamID: 1, to: &bytes)
        bytes.writeRepeatingByte(7, count: 300)
        HTTP2Wire.writeData(ByteBuffer(repeating: 8, count: 20), streamID: 1, endStream: true, to: &bytes)
        HTTP2Wire.writeFrameHeader(length: 8, type: .ping, streamID: 0, to: &bytes)
        bytes.writeInteger(UInt64(42))
        return bytes
    }

    /// The events as text, fed to a server-side reader in pieces of `size` bytes.
    static func events(inPiecesOf size: Int) throws -> [String] {
        var reader = HTTP2FrameReader(server: true)
        var bytes = clientBytes()
        var events: [String] = []
        while bytes.readableBytes > 0 {
            reader.append(bytes.readSlice(length: min(size, bytes.readableBytes))!)
            while let event = try reader.next() {
                switch event {
                case .headerBlock(let block):
                    events.append("block \(block.streamID) \(Array(block.fragments.readableBytesView)) end:\(block.endStream)")
                case .frame(let frame):
                    events.append("\(frame.type.map { "\($0)" } ?? "?") \(frame.streamID) \(frame.flags) \(Array(frame.payload.readableBytesView))")
                }
            }
        }
        return events
    }

    @Test("the same events whether the bytes come whole, one at a time or in odd pieces")
    func cutAnywhere() throws {
        let whole = try Self.events(inPiecesOf: 1 << 20)
        #expect(whole.count == 5)
        #expect(whole[1] == "block 1 \(Array(0..<40)) end:false")
        for size in [1, 7, 9, 10, 333] {
            #expect(try Self.events(inPiecesOf: size) == whole, "pieces of \(size) bytes")
        }
    }

    @Test("a wrong preface, a frame between HEADERS and CONTINUATION, and an oversized frame are connection errors")
    func violations() {
        var badPreface = HTTP2FrameReader(server: true)
        badPreface.append(ByteBuffer(string: "GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
        #expect(throws: HTTP2Wire.ErrorCode.protocolError) { try badPreface.next() }

        var interrupted = HTTP2FrameReader(server: false)
        var bytes = ByteBuffer()
        HTTP2Wire.writeFrameHeader(length: 1, type: .headers, streamID: 1, to: &bytes)  // no END_HEADERS
        bytes.writeInteger(UInt8(0x88))
        HTTP2Wire.writeFrameHeader(length: 8, type: .ping, streamID: 0, to: &bytes)
        bytes.writeInteger(UInt64(1))
        interrupted.append(bytes)
        #expect(throws: HTTP2Wire.ErrorCode.protocolError) { try interrupted.next() }

        var oversized = HTTP2FrameReader(server: false)
        var big = ByteBuffer()
        HTTP2Wire.writeFrameHeader(length: 16_385, type: .data, streamID: 1, to: &big)
        oversized.append(big)
        #expect(throws: HTTP2Wire.ErrorCode.frameSizeError) { try oversized.next() }
    }
}
