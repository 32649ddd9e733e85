import NIOCore

// Tests: Tests/LivelineAPNsTests/HTTP2FrameReaderTests.swift, Tests/LivelineHTTP2Tests/HTTP2FuzzTests.swift

/// Cuts a connection's incoming bytes into frames, and joins each HEADERS frame with its
/// CONTINUATION frames into one header block, with nothing allowed between them (RFC 9113 §6.10).
///
/// A header block is held whole until its last fragment, so it is the one place a peer could make
/// this endpoint buffer without limit (the CVE-2024-28182 class): both its size and its count of
/// CONTINUATION frames are capped, and passing either is a connection error ENHANCE_YOUR_CALM. Not
/// COMPRESSION_ERROR: nothing is wrong with the compression, the peer asks for more than we give.
package struct HTTP2FrameReader {
    package struct HeaderBlock {
        package var streamID: UInt32
        /// The block's fragments, padding and priority fields removed.
        package var fragments: ByteBuffer
        package var endStream: Bool
    }

    package enum Event {
        /// A frame other than HEADERS and CONTINUATION.
        case frame(HTTP2Wire.Frame)
        case headerBlock(HeaderBlock)
    }

    private var buffer: ByteBuffer?
    private var pendingBlock: HeaderBlock?
    private var awaitsPreface: Bool
    private var continuationFrames = 0
    /// The largest header block (all fragments together) accepted.
    package let maximumHeaderBlockSize: Int
    /// The most CONTINUATION frames one header block may use. Empty ones cost nothing in size, so
    /// the size cap alone does not bound the work a block can cause.
    package let maximumContinuationFrames: Int

    /// - Parameter server: a server first reads the client's connection preface.
    package init(server: Bool, maximumHeaderBlockSize: Int = 1 << 17, maximumContinuationFrames: Int = 64) {
        awaitsPreface = server
        self.maximumHeaderBlockSize = maximumHeaderBlockSize
        self.maximumContinuationFrames = maximumContinuationFrames
    }

    /// Bytes held for frames not yet complete: at most one frame, or a header block under its cap.
    package var bufferedBytes: Int {
        (buffer?.readableBytes ?? 0) + (pendingBlock?.fragments.readableBytes ?? 0)
    }

    package mutating func append(_ bytes: ByteBuffer) {
        if buffer == nil || buffer!.readableBytes == 0 {
            buffer = bytes
        } else {
            var bytes = bytes
            buffer!.writeBuffer(&bytes)
        }
    }

    /// The next complete event, `nil` when more bytes are needed. Throws the connection error to
    /// send in GOAWAY when the peer broke the protocol; the connection is then unusable.
    package mutating func next() throws(HTTP2Wire.ErrorCode) -> Event? {
        guard var bytes = buffer else { return nil }
        buffer = nil
        defer { if bytes.readableBytes > 0 { buffer = bytes } }
        if awaitsPreface {
            guard let preface = bytes.readBytes(length: HTTP2Wire.clientPreface.count) else { return nil }
            guard preface == HTTP2Wire.clientPreface else { throw .protocolError }
            awaitsPreface = false
        }
        while true {
            let frame: HTTP2Wire.Frame
            switch HTTP2Wire.readFrame(from: &bytes, maximumLength: HTTP2Wire.defaultMaximumFrameSize) {
            case .needMoreBytes:
                // Keep only the partial frame. The frames handed out share the read buffer's
                // storage, so compacting it in place would copy all of it, on every read.
                if bytes.readableBytes > 0 {
                    var rest = ByteBufferAllocator().buffer(capacity: max(bytes.readableBytes, 4_096))
                    rest.writeBuffer(&bytes)
                    bytes = rest
                }
                return nil
            case .tooLarge: throw .frameSizeError
            case .frame(let read): frame = read
            }
            if var block = pendingBlock {
                guard frame.type == .continuation, frame.streamID == block.streamID else { throw .protocolError }
                continuationFrames += 1
                guard continuationFrames <= maximumContinuationFrames,
                    block.fragments.readableBytes + frame.payload.readableBytes <= maximumHeaderBlockSize
                else { throw .enhanceYourCalm }
                var fragment = frame.payload
                block.fragments.writeBuffer(&fragment)
                pendingBlock = block
                if frame.has(HTTP2Wire.Flag.endHeaders) {
                    pendingBlock = nil
                    return .headerBlock(block)
                }
                continue
            }
            switch frame.type {
            case .headers:
                guard frame.streamID != 0, let fragment = HTTP2Wire.content(of: frame) else { throw .protocolError }
                let block = HeaderBlock(streamID: frame.streamID, fragments: fragment, endStream: frame.has(HTTP2Wire.Flag.endStream))
                if frame.has(HTTP2Wire.Flag.endHeaders) { return .headerBlock(block) }
                guard fragment.readableBytes <= maximumHeaderBlockSize else { throw .enhanceYourCalm }
                continuationFrames = 0
                pendingBlock = block
            case .continuation:
                throw .protocolError  // without a HEADERS before it
            default:
                return .frame(frame)
            }
        }
    }
}
