import Foundation
import LivelineHTTP2
import NIOCore
import NIOHPACK
import Testing

/// Bounded random input for the frame reader and the session, both roles, in CI. Each test runs a
/// fixed number of iterations from one seed; the seed is in every failure message, and
/// `LIVELINE_FUZZ_SEED=<seed>` replays it. Asserted: no crash, no hang (events bounded by the
/// input), bounded buffering, every error written as RST_STREAM or GOAWAY with a valid code, valid
/// traffic never refused, and each malformed frame refused with the code the RFC names.
///
/// The loops are CPU-bound: one test at a time, yielding often, so they never hold every thread of
/// the cooperative pool while other suites' timed steps wait for one.
@Suite("HTTP/2 bounded fuzzing", .serialized)
struct HTTP2FuzzTests {
    static let seed: UInt64 = ProcessInfo.processInfo.environment["LIVELINE_FUZZ_SEED"].flatMap { UInt64($0) }
        ?? UInt64.random(in: 1...UInt64.max)
    static let bufferCap = HTTP2Session.Configuration().maximumHeaderBlockSize + 16_384 + 9

    @Test("the frame reader on random bytes, cut anywhere: no crash, buffering bounded")
    func readerOnRandomBytes() async {
        var random = SeededRandom(seed: Self.seed)
        for iteration in 0..<2_000 {
            if iteration % 25 == 0 { await Task.yield() }
            var reader = HTTP2FrameReader(server: random.next() % 2 == 0, maximumHeaderBlockSize: 4_096, maximumContinuationFrames: 8)
            var bytes = Self.randomFrames(count: Int(random.next() % 12), random: &random)
            if random.next() % 4 == 0 { bytes.writeBytes(random.bytes(Int(random.next() % 64))) }
            var events = 0
            readLoop: while bytes.readableBytes > 0 {
                reader.append(bytes.readSlice(length: min(bytes.readableBytes, 1 + Int(random.next() % 200)))!)
                do {
                    while try reader.next() != nil {
                        events += 1
                        if events > 10_000 { break readLoop }
                    }
                } catch {
                    break
                }
                #expect(reader.bufferedBytes <= 4_096 + 16_384 + 9 + 200, "seed \(Self.seed) iteration \(iteration)")
            }
            #expect(events <= 100, "seed \(Self.seed) iteration \(iteration): events must be bounded by the frames")
        }
    }

    @Test("the session on random frames, both roles: errors always written with a valid code", arguments: [HTTP2Session.Role.server, .client])
    func sessionOnRandomFrames(role: HTTP2Session.Role) async {
        var random = SeededRandom(seed: Self.seed ^ (role == .server ? 1 : 2))
        for iteration in 0..<1_000 {
            if iteration % 25 == 0 { await Task.yield() }
            var peer = SessionHarness(role: role)
            if role == .client {
                for _ in 0..<Int(random.next() % 4) {
                    _ = try? peer.session.sendRequest(HPACKHeaders([(":method", "POST")]), body: ByteBuffer(string: "{}"))
                }
                peer.collectOutput()
            }
            peer.written.removeAll()
            let bytes = Self.randomFrames(count: 1 + Int(random.next() % 10), random: &random)
            Self.check(&peer, feeding: bytes, random: &random, context: "seed \(Self.seed) iteration \(iteration)")
        }
    }

    @Test("the session on valid traffic with random timing and cuts: nothing refused", arguments: [HTTP2Session.Role.server, .client])
    func sessionOnValidTraffic(role: HTTP2Session.Role) async {
        var random = SeededRandom(seed: Self.seed ^ (role == .server ? 3 : 4))
        var delivered = 0
        for iteration in 0..<300 {
            if iteration % 10 == 0 { await Task.yield() }
            var peer = SessionHarness(role: role)
            var traffic = ValidTraffic(role: role)
            let context = "seed \(Self.seed) iteration \(iteration)"
            for _ in 0..<Int(random.next() % 30) {
                let bytes = traffic.next(&peer, random: &random)
                let events = Self.check(&peer, feeding: bytes, random: &random, context: context)
                traffic.observe(events, peer: &peer, random: &random)
                delivered += events.count { $0.hasPrefix("headers") || $0.hasPrefix("data") }
                #expect(!events.contains { $0.contains("rror") }, "\(context): \(events)")
                #expect(peer.errorsWritten.allSatisfy { $0.hasSuffix("cancel") }, "\(context): \(peer.errorsWritten)")
                if peer.session.isClosed { break }
            }
        }
        // The generator must reach the session's stream paths, not just its control frames.
        #expect(delivered > 200, "seed \(Self.seed): only \(delivered) header blocks and bodies delivered")
    }

    @Test("a malformed frame after valid traffic is refused with the RFC's code", arguments: [HTTP2Session.Role.server, .client])
    func mutatedValidTraffic(role: HTTP2Session.Role) async {
        var random = SeededRandom(seed: Self.seed ^ (role == .server ? 5 : 6))
        for iteration in 0..<500 {
            if iteration % 25 == 0 { await Task.yield() }
            var peer = SessionHarness(role: role)
            var traffic = ValidTraffic(role: role)
            let context = "seed \(Self.seed) iteration \(iteration)"
            for _ in 0..<Int(random.next() % 10) {
                let events = Self.check(&peer, feeding: traffic.next(&peer, random: &random), random: &random, context: context)
                traffic.observe(events, peer: &peer, random: &random)
            }
            peer.written.removeAll()
            let (bytes, expected) = Malformed.pick(&random, peer: &peer)
            var trailing = bytes
            if random.next() % 2 == 0 { trailing = trailing + SessionHarness.ping(7) }
            let events = Self.check(&peer, feeding: trailing, random: &random, context: context)
            #expect(peer.errorsWritten.first == expected, "\(context): \(events), wrote \(peer.errorsWritten)")
        }
    }

    @Test("random and bit-flipped HPACK blocks through the session: headers or COMPRESSION_ERROR, nothing else", arguments: [HTTP2Session.Role.server, .client])
    func hpackThroughSession(role: HTTP2Session.Role) async {
        var random = SeededRandom(seed: Self.seed ^ (role == .server ? 7 : 8))
        for iteration in 0..<1_000 {
            if iteration % 25 == 0 { await Task.yield() }
            var peer = SessionHarness(role: role)
            var streamID: UInt32 = 1
            if role == .client {
                streamID = try! peer.session.sendRequest(HPACKHeaders([(":method", "GET")]), body: nil)
                peer.collectOutput()
            }
            peer.written.removeAll()
            var block = ByteBuffer()
            if random.next() % 2 == 0 {
                block.writeBytes(random.bytes(Int(random.next() % 40)))
            } else {
                let fields = [(":status", "200"), ("apns-id", UUID().uuidString), ("x-\(random.next() % 100)", "v")]
                try! peer.encoder.encode(headers: HPACKHeaders(fields), to: &block)
                for _ in 0..<1 + Int(random.next() % 3) {
                    let index = block.readerIndex + Int(random.next() % UInt64(block.readableBytes))
                    block.setInteger(block.getInteger(at: index, as: UInt8.self)! ^ UInt8(1 << (random.next() % 8)), at: index)
                }
            }
            var bytes = ByteBuffer()
            HTTP2Wire.writeHeaders(block, streamID: streamID, endStream: true, maximumFrameSize: 4 + Int(random.next() % 20), to: &bytes)
            let context = "seed \(Self.seed) iteration \(iteration)"
            let events = Self.check(&peer, feeding: bytes, random: &random, context: context)
            #expect(events == ["headers \(streamID) end"] || events == ["connectionError compressionError"], "\(context): \(events)")
        }
    }

    // MARK: Checks

    /// Feeds bytes in random pieces and checks what must hold whatever they are.
    @discardableResult
    static func check(_ peer: inout SessionHarness, feeding bytes: ByteBuffer, random: inout SeededRandom, context: String) -> [String] {
        var bytes = bytes
        let total = bytes.readableBytes
        var events: [String] = []
        while bytes.readableBytes > 0 {
            events += peer.feed(bytes.readSlice(length: min(bytes.readableBytes, 1 + Int(random.next() % 300)))!)
            #expect(peer.session.bufferedBytes <= bufferCap, "\(context): buffered \(peer.session.bufferedBytes)")
            if random.next() % 8 == 0 { peer.now = peer.now + .milliseconds(Int64(random.next() % 2_000)) }
        }
        #expect(events.count <= total / 9 + 2, "\(context): more events than frames")
        // Every error event is on the wire, with the same code; nothing follows a connection error.
        for (index, event) in events.enumerated() {
            if event.hasPrefix("connectionError ") {
                let code = event.dropFirst("connectionError ".count)
                #expect(peer.errorsWritten.last == "goaway \(code)", "\(context): \(events) \(peer.errorsWritten)")
                #expect(index == events.count - 1, "\(context): events after a connection error: \(events)")
                #expect(peer.session.isClosed, "\(context)")
            } else if event.hasPrefix("streamError ") {
                let parts = event.split(separator: " ")
                #expect(peer.errorsWritten.contains("rst \(parts[1]) \(parts[2])"), "\(context): \(events) \(peer.errorsWritten)")
            }
        }
        for written in peer.errorsWritten {
            #expect(!written.last!.isNumber, "\(context): an error code outside RFC 9113 §7 was written: \(written)")
        }
        if peer.session.isClosed {
            #expect(peer.errorsWritten.last?.hasPrefix("goaway ") == true, "\(context): closed without GOAWAY")
        }
        return events
    }

    /// Frames with random types, flags, stream ids and payloads, some of them valid-looking.
    static func randomFrames(count: Int, random: inout SeededRandom) -> ByteBuffer {
        var bytes = ByteBuffer()
        for _ in 0..<count {
            let type = UInt8(random.next() % 12)
            let length = random.next() % 10 == 0 ? Int(random.next() % 17_000) : Int(random.next() % 24)
            let streamID = UInt32(random.next() % 3 == 0 ? 0 : random.next() % 12)
            bytes.writeInteger(UInt8(truncatingIfNeeded: length >> 16))
            bytes.writeInteger(UInt16(truncatingIfNeeded: length))
            bytes.writeInteger(type)
            bytes.writeInteger(UInt8(truncatingIfNeeded: random.next()) & 0x2D)
            bytes.writeInteger(streamID)
            bytes.writeBytes(random.bytes(min(length, 17_000)))
        }
        return bytes
    }
}

/// Traffic a correct peer could send, generated step by step from the session's answers.
struct ValidTraffic {
    let role: HTTP2Session.Role
    /// Streams the peer may still send on (server role: ours to answer come from events).
    var open: [UInt32] = []
    var nextStreamID: UInt32 = 1
    var sentBytes = 0
    var pings = 0
    var settings = 0
    var resets = 0

    init(role: HTTP2Session.Role) { self.role = role }

    mutating func next(_ peer: inout SessionHarness, random: inout SeededRandom) -> ByteBuffer {
        var bytes = ByteBuffer()
        switch random.next() % 9 {
        case 0, 1:
            if role == .server {
                guard open.count < 50 else { return bytes }
                let end = random.next() % 3 == 0
                var block = ByteBuffer()
                try! peer.encoder.encode(headers: HPACKHeaders([(":method", "POST"), (":path", "/3/device/\(random.next() % 1_000)")]), to: &block)
                HTTP2Wire.writeHeaders(block, streamID: nextStreamID, endStream: end, maximumFrameSize: 1 + Int(random.next() % 64), to: &bytes)
                if !end { open.append(nextStreamID) }
                nextStreamID += 2 * UInt32(1 + random.next() % 2)  // ids may skip
            } else if let streamID = try? peer.session.sendRequest(HPACKHeaders([(":method", "POST")]), body: ByteBuffer(string: "{}")) {
                peer.collectOutput()
                open.append(streamID)
            }
        case 2, 3:
            guard let streamID = open.randomElement(using: &random), sentBytes < 500_000 else { return bytes }
            let end = random.next() % 2 == 0
            if role == .client {
                // The server's answer: a head, then maybe a body.
                var block = ByteBuffer()
                try! peer.encoder.encode(headers: HPACKHeaders([(":status", "200"), ("apns-id", "\(random.next())")]), to: &block)
                HTTP2Wire.writeHeaders(block, streamID: streamID, endStream: end, maximumFrameSize: 16_384, to: &bytes)
                if !end { bytes = bytes + Self.data(streamID, random: &random, sent: &sentBytes, end: true) }
                open.removeAll { $0 == streamID }
            } else {
                bytes = Self.data(streamID, random: &random, sent: &sentBytes, end: end)
                if end { open.removeAll { $0 == streamID } }
            }
        case 4:
            guard pings < 50 else { return bytes }
            pings += 1
            bytes = SessionHarness.ping(random.next())
        case 5:
            guard settings < 40 else { return bytes }
            settings += 1
            HTTP2Wire.writeSettings([(.initialWindowSize, 65_535 + Int(random.next() % 100_000)), (.headerTableSize, 4_096)], to: &bytes)
        case 6:
            HTTP2Wire.writeWindowUpdate(streamID: open.randomElement(using: &random) ?? 0, increment: 1 + Int(random.next() % 1_000), to: &bytes)
        case 7:
            guard let streamID = open.randomElement(using: &random), resets < 500 else { return bytes }
            resets += 1
            bytes = SessionHarness.reset(streamID)
            open.removeAll { $0 == streamID }
        default:
            // PRIORITY on any stream, even idle, and a frame of an unknown type: both ignored.
            bytes = SessionHarness.frame(.priority, streamID: 1 + UInt32(random.next() % 40), payload: [0, 0, 0, 0, 16])
            bytes.writeBytes([0, 0, 3, 0xFA, 0, 0, 0, 0, 0, 1, 2, 3])  // type 0xFA, stream 0
        }
        return bytes
    }

    /// Answers the streams whose request is complete, as a handler would.
    mutating func observe(_ events: [String], peer: inout SessionHarness, random: inout SeededRandom) {
        guard role == .server else { return }
        for event in events where event.hasSuffix(" end") {
            let streamID = UInt32(event.split(separator: " ")[1])!
            let body = random.next() % 2 == 0 ? nil : ByteBuffer(repeating: 1, count: Int(random.next() % 30_000))
            peer.session.sendResponse(HPACKHeaders([(":status", "200")]), body: body, streamID: streamID)
        }
        peer.collectOutput()
    }

    static func data(_ streamID: UInt32, random: inout SeededRandom, sent: inout Int, end: Bool) -> ByteBuffer {
        let length = Int(random.next() % 3_000)
        sent += length
        if random.next() % 3 == 0 {
            let padding = Int(random.next() % 20)
            var payload = [UInt8(padding)]
            payload += Array(repeating: 0x61, count: length)
            payload += Array(repeating: 0, count: padding)
            return SessionHarness.frame(.data, flags: HTTP2Wire.Flag.padded | (end ? HTTP2Wire.Flag.endStream : 0), streamID: streamID, payload: payload)
        }
        return SessionHarness.data(streamID, length: length, endStream: end)
    }
}

/// One frame that breaks a rule whatever came before it, with what the RFC says must be written.
enum Malformed {
    static func pick(_ random: inout SeededRandom, peer: inout SessionHarness) -> (ByteBuffer, String) {
        typealias H = SessionHarness
        switch random.next() % 20 {
        case 0: return (H.frame(.ping, streamID: 0, payload: [1, 2, 3, 4, 5, 6, 7]), "goaway frameSizeError")
        case 1: return (H.frame(.settings, streamID: 0, payload: [0, 4, 0, 0, 1]), "goaway frameSizeError")
        case 2: return (H.frame(.settings, flags: HTTP2Wire.Flag.ack, streamID: 0, payload: [0, 4, 0, 0, 1, 0]), "goaway frameSizeError")
        case 3: return (H.frame(.windowUpdate, streamID: 0, payload: [0, 0, 1]), "goaway frameSizeError")
        case 4: return (H.reset(0), "goaway protocolError")
        case 5: return (H.data(0, length: 4, endStream: false), "goaway protocolError")
        case 6: return (H.frame(.headers, flags: HTTP2Wire.Flag.endHeaders, streamID: 0, payload: [0x82]), "goaway protocolError")
        case 7: return (H.frame(.ping, streamID: 1, payload: [0, 0, 0, 0, 0, 0, 0, 0]), "goaway protocolError")
        case 8: return (H.frame(.settings, streamID: 1, payload: []), "goaway protocolError")
        case 9: return (H.frame(.goAway, streamID: 3, payload: [0, 0, 0, 0, 0, 0, 0, 0]), "goaway protocolError")
        case 10: return (H.frame(.windowUpdate, streamID: 0, payload: [0, 0, 0, 0]), "goaway protocolError")
        case 11: return (H.data(100_001, length: 4, endStream: false), "goaway protocolError")
        case 12: return (H.frame(.headers, streamID: 100_001, payload: [0x82]) + H.ping(1), "goaway protocolError")
        case 13: return (H.frame(.pushPromise, flags: HTTP2Wire.Flag.endHeaders, streamID: 1, payload: [0, 0, 0, 2, 0x82]), "goaway protocolError")
        case 14: return (H.frame(.settings, streamID: 0, payload: [0, 2, 0, 0, 0, 2]), "goaway protocolError")
        case 15: return (H.frame(.settings, streamID: 0, payload: [0, 5, 0, 0, 0, 100]), "goaway protocolError")
        case 16: return (H.frame(.settings, streamID: 0, payload: [0, 4, 0x80, 0, 0, 0]), "goaway flowControlError")
        case 17: return (H.frame(.continuation, flags: HTTP2Wire.Flag.endHeaders, streamID: 1, payload: [0x82]), "goaway protocolError")
        case 18:
            var big = ByteBuffer()
            HTTP2Wire.writeFrameHeader(length: 16_385, type: .data, streamID: 1, to: &big)
            big.writeRepeatingByte(0, count: 16_385)
            return (big, "goaway frameSizeError")
        default:
            // HPACK: indexed field 0 does not exist (RFC 7541 §6.1).
            return (H.frame(.headers, flags: HTTP2Wire.Flag.endHeaders | HTTP2Wire.Flag.endStream, streamID: 1, payload: [0x80]), "goaway compressionError")
        }
    }
}

/// SplitMix64: small, fast, and the same sequence for a seed on every platform.
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) }
    }
}
