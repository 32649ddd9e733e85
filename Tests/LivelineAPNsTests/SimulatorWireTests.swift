import APNsSimulator
import Foundation
import LivelineHTTP2
import NIOCore
import NIOHPACK
import NIOPosix
import Testing

/// The simulator's own HTTP/2 server, byte by byte: what a client other than ours could send.
/// The client in the other suites only exercises the common path (NIO's frames, one per request).
@Suite("APNs simulator: HTTP/2 on the wire")
struct SimulatorWireTests {
    /// A raw client: writes frames it builds itself and reads the server's frames one by one.
    struct RawConnection {
        let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        private var inbound: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
        private var buffered = ByteBuffer()
        var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())

        init(port: Int) async throws {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: "127.0.0.1", port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
            inbound = channel.inbound.makeAsyncIterator()
        }

        func send(_ bytes: ByteBuffer) async throws {
            try await channel.outbound.write(bytes)
        }

        mutating func headerBlock(_ fields: [(String, String)]) throws -> ByteBuffer {
            var block = ByteBuffer()
            try encoder.encode(headers: HPACKHeaders(fields), to: &block)
            return block
        }

        /// The next frame from the server, or `nil` once it closed the connection.
        mutating func nextFrame() async throws -> HTTP2Wire.Frame? {
            while true {
                if case .frame(let frame) = HTTP2Wire.readFrame(from: &buffered, maximumLength: 1 << 24) { return frame }
                guard var more = try await inbound.next() else { return nil }
                buffered.writeBuffer(&more)
            }
        }

        /// Reads frames until one of `type` arrives, returning it and everything read before it.
        mutating func frame(
            _ type: HTTP2Wire.FrameType
        ) async throws -> (match: HTTP2Wire.Frame?, before: [HTTP2Wire.Frame]) {
            var before: [HTTP2Wire.Frame] = []
            while let frame = try await nextFrame() {
                if frame.type == type { return (frame, before) }
                before.append(frame)
            }
            return (nil, before)
        }
    }

    static func withRawConnection(
        _ configuration: APNsSimulatorConfiguration = .init(useTLS: false),
        _ body: (APNsSimulator, inout RawConnection) async throws -> Void
    ) async throws {
        let simulator = try APNsSimulator(configuration: configuration)
        let port = try await simulator.start()
        var connection = try await RawConnection(port: port)
        // A frame that never comes must fail the test, not hang it: the watchdog ends the reads.
        let channel = connection.channel.channel
        let watchdog = channel.eventLoop.scheduleTask(in: .seconds(10)) { channel.close(promise: nil) }
        defer { watchdog.cancel() }
        do {
            try await connection.send(ByteBuffer(bytes: HTTP2Wire.clientPreface))
            try await body(simulator, &connection)
        } catch {
            try? await connection.channel.channel.close()
            try await simulator.stop()
            throw error
        }
        try? await connection.channel.channel.close()
        try await simulator.stop()
    }

    static let statsRequest = [(":method", "GET"), (":scheme", "http"), (":path", "/_sim/stats"), (":authority", "sim")]

    @Test("SETTINGS, PING, a padded header block split over CONTINUATION, an answer in DATA")
    func framesAClientMaySend() async throws {
        try await Self.withRawConnection { _, connection in
            let block = try connection.headerBlock(Self.statsRequest)
            let cut = block.readableBytes / 2
            var bytes = ByteBuffer()
            HTTP2Wire.writeSettings([(.headerTableSize, 4_096)], to: &bytes)
            HTTP2Wire.writeFrameHeader(length: 8, type: .ping, streamID: 0, to: &bytes)
            bytes.writeInteger(UInt64(0xC0FFEE))
            // HEADERS with 3 bytes of padding and priority fields; the block's second half in CONTINUATION.
            let flags = HTTP2Wire.Flag.padded | HTTP2Wire.Flag.priority | HTTP2Wire.Flag.endStream
            HTTP2Wire.writeFrameHeader(length: 1 + 5 + cut + 3, type: .headers, flags: flags, streamID: 1, to: &bytes)
            bytes.writeInteger(UInt8(3))
            bytes.writeBytes([0, 0, 0, 0, 15])
            bytes.writeImmutableBuffer(block.getSlice(at: block.readerIndex, length: cut)!)
            bytes.writeBytes([0, 0, 0])
            HTTP2Wire.writeFrameHeader(
                length: block.readableBytes - cut, type: .continuation, flags: HTTP2Wire.Flag.endHeaders, streamID: 1, to: &bytes
            )
            bytes.writeImmutableBuffer(block.getSlice(at: block.readerIndex + cut, length: block.readableBytes - cut)!)
            try await connection.send(bytes)

            let (answer, before) = try await connection.frame(.headers)
            let serverSettings = before.filter { $0.type == .settings && !$0.has(HTTP2Wire.Flag.ack) }
            #expect(serverSettings.count == 1)
            #expect(before.contains { $0.type == .settings && $0.has(HTTP2Wire.Flag.ack) })
            let pong = before.first { $0.type == .ping }
            #expect(pong?.has(HTTP2Wire.Flag.ack) == true)
            #expect(pong.flatMap { $0.payload.getInteger(at: $0.payload.readerIndex, as: UInt64.self) } == 0xC0FFEE)

            #expect(answer?.streamID == 1)
            var headerBlock = answer?.payload ?? ByteBuffer()
            let headers = try connection.decoder.decodeHeaders(from: &headerBlock)
            #expect(headers.first(name: ":status") == "200")
            let data = try await connection.frame(.data).match
            #expect(data?.streamID == 1)
            #expect(data?.has(HTTP2Wire.Flag.endStream) == true)
            let stats = try JSONSerialization.jsonObject(with: Data(data?.payload.readableBytesView ?? [])) as? [String: Any]
            #expect(stats?["connectionsAccepted"] as? Int == 1)
        }
    }

    @Test("an answer's DATA waits for the client's flow-control window")
    func answerRespectsFlowControl() async throws {
        try await Self.withRawConnection { _, connection in
            var bytes = ByteBuffer()
            HTTP2Wire.writeSettings([(.initialWindowSize, 10)], to: &bytes)
            HTTP2Wire.writeHeaders(
                try connection.headerBlock(Self.statsRequest), streamID: 1, endStream: true, maximumFrameSize: 16_384, to: &bytes
            )
            try await connection.send(bytes)
            let first = try await connection.frame(.data).match
            #expect(first?.payload.readableBytes == 10)
            #expect(first?.has(HTTP2Wire.Flag.endStream) == false)

            var update = ByteBuffer()
            HTTP2Wire.writeWindowUpdate(streamID: 1, increment: 100_000, to: &update)
            try await connection.send(update)
            let rest = try await connection.frame(.data).match
            #expect(rest?.has(HTTP2Wire.Flag.endStream) == true)
            let body = Data(first?.payload.readableBytesView ?? []) + Data(rest?.payload.readableBytesView ?? [])
            #expect(try JSONSerialization.jsonObject(with: body) is [String: Any])
        }
    }

    @Test("a stream above SETTINGS_MAX_CONCURRENT_STREAMS is refused; an oversized frame ends the connection")
    func limitsAreEnforced() async throws {
        try await Self.withRawConnection(.init(useTLS: false, maximumConcurrentStreams: 1)) { simulator, connection in
            var bytes = ByteBuffer()
            // The client's preface ends with SETTINGS (RFC 9113 §3.4); anything else first is refused.
            HTTP2Wire.writeSettings([], to: &bytes)
            // Stream 1 stays open (its request has no END_STREAM yet), so stream 3 is one too many.
            HTTP2Wire.writeHeaders(
                try connection.headerBlock(Self.statsRequest), streamID: 1, endStream: false, maximumFrameSize: 16_384, to: &bytes
            )
            HTTP2Wire.writeHeaders(
                try connection.headerBlock(Self.statsRequest), streamID: 3, endStream: true, maximumFrameSize: 16_384, to: &bytes
            )
            try await connection.send(bytes)
            let reset = try await connection.frame(.rstStream).match
            #expect(reset?.streamID == 3)
            #expect(reset.flatMap { $0.payload.getInteger(at: $0.payload.readerIndex, as: UInt32.self) }
                    == HTTP2Wire.ErrorCode.refusedStream.rawValue)
            #expect(simulator.statistics.maximumObservedConcurrentStreams == 1)

            var oversized = ByteBuffer()
            // The header alone breaks the limit. Sending the 20,000 bytes too left them unread
            // in the server's socket at its close, and the kernel's reset then sometimes beat
            // the GOAWAY to this reader on a loaded machine.
            HTTP2Wire.writeFrameHeader(length: 20_000, type: .data, streamID: 1, to: &oversized)
            try await connection.send(oversized)
            let goAway = try await connection.frame(.goAway).match
            #expect(goAway.flatMap { $0.payload.getInteger(at: $0.payload.readerIndex + 4, as: UInt32.self) }
                    == HTTP2Wire.ErrorCode.frameSizeError.rawValue)
            #expect(try await connection.nextFrame() == nil, "the server closes after GOAWAY")
        }
    }
}
