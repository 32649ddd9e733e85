import LivelineHTTP2
import NIOCore
import NIOHPACK
import Testing

/// ``HeaderBlockEncoder`` against NIO's HPACK decoder, an independent implementation: every block
/// decodes to the fields given, in order and with their indexing, through table growth, eviction,
/// oversized entries and size changes; and a push's repeated fields shrink to their indexes.
@Suite("HPACK header block encoder")
struct HeaderBlockEncoderTests {
    private func decode(_ headers: HPACKHeaders, _ encoder: inout HeaderBlockEncoder, _ decoder: inout HPACKDecoder) throws -> (HPACKHeaders, Int) {
        var block = ByteBuffer()
        encoder.encode(headers, to: &block)
        let size = block.readableBytes
        let decoded = try decoder.decodeHeaders(from: &block)
        #expect(block.readableBytes == 0)
        return (decoded, size)
    }

    private func fields(_ headers: HPACKHeaders) -> [String] {
        headers.map { "\($0.name): \($0.value) \($0.indexable == .neverIndexed ? "never" : "")" }
    }

    private func push(token: String, jwt: String, apnsID: Int, priority: String = "10") -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":path", value: "/3/device/" + token, indexing: .nonIndexable)
        headers.add(name: ":authority", value: "api.push.apple.com")
        headers.add(name: "apns-push-type", value: "liveactivity")
        headers.add(name: "apns-topic", value: "com.example.rides.push-type.liveactivity")
        headers.add(name: "apns-priority", value: priority)
        headers.add(name: "apns-expiration", value: "1795000000", indexing: .nonIndexable)
        headers.add(name: "apns-id", value: "7d0c3bd4-0000-4000-8000-\(100_000_000_000 + apnsID)", indexing: .nonIndexable)
        headers.add(name: "authorization", value: "bearer " + jwt, indexing: .indexable)
        return headers
    }

    @Test("static fields are one byte each: :method POST is 0x83, :scheme https 0x87, :status 200 0x88")
    func staticFieldsAreIndexes() {
        var encoder = HeaderBlockEncoder()
        var block = ByteBuffer()
        encoder.encode(HPACKHeaders([(":method", "POST"), (":scheme", "https"), (":status", "200")]), to: &block)
        #expect(Array(block.readableBytesView) == [0x83, 0x87, 0x88])
    }

    @Test("a name's place in the static table is found when the name is made: its values are indexes, others name it by index")
    func staticNamesFoundOnce() throws {
        var headers = HeaderFields()
        headers.add(HeaderName(":method"), "GET")
        headers.add(HeaderName(":status"), "304")
        headers.add(HeaderName(":status"), "201", indexing: .nonIndexable)
        headers.add(HeaderName("accept-encoding"), "gzip, deflate")
        headers.add(HeaderName("www-authenticate"), "x", indexing: .nonIndexable)
        headers.add(HeaderName(":authority"), "")
        headers.add(HeaderName("apns-topic"), "t", indexing: .nonIndexable)
        var encoder = HeaderBlockEncoder()
        var block = ByteBuffer()
        encoder.encode(headers, to: &block)
        #expect(Array(block.readableBytesView) == [
            0x82,  // :method GET, entry 2
            0x8B,  // :status 304, entry 11
            0x08, 0x03, 0x32, 0x30, 0x31,  // :status by name (8), "201", without indexing
            0x90,  // accept-encoding: gzip, deflate, entry 16
            0x0F, 0x2E, 0x01, 0x78,  // www-authenticate by name (61 = 15 + 46), "x"
            0x41, 0x00,  // :authority by name (1) with an empty value, incremental indexing
            0x00, 0x0A, 0x61, 0x70, 0x6E, 0x73, 0x2D, 0x74, 0x6F, 0x70, 0x69, 0x63, 0x01, 0x74,  // apns-topic: t, name literal
        ])
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        let decoded = try decoder.decodeHeaders(from: &block)
        #expect(decoded.map { "\($0.name): \($0.value)" } == headers.fields.map { "\($0.name.text): \($0.value)" })
    }

    @Test("a push's second header block carries only its path, id, expiration and indexes")
    func repeatedFieldsBecomeIndexes() throws {
        var encoder = HeaderBlockEncoder()
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        let jwt = String(repeating: "e", count: 250)
        let first = push(token: String(repeating: "a", count: 64), jwt: jwt, apnsID: 1)
        let second = push(token: String(repeating: "b", count: 64), jwt: jwt, apnsID: 2)
        decoder.maxHeaderListSize = 1 << 20
        let (decodedFirst, firstSize) = try decode(first, &encoder, &decoder)
        let (decodedSecond, secondSize) = try decode(second, &encoder, &decoder)
        #expect(fields(decodedFirst) == fields(first))
        #expect(fields(decodedSecond) == fields(second))
        #expect(firstSize > 400)
        // Path: 1 + 1 + 74 (its name from the static table); expiration: 1 + 1 + 15 + 1 + 10;
        // apns-id: 1 + 1 + 7 + 1 + 36; seven fields by index, the provider token's among them.
        #expect(secondSize == 76 + 28 + 46 + 7, "second block \(secondSize) bytes")
    }

    @Test("random header lists through one encoder and one decoder, with size changes: every field as given", arguments: [1, 2, 3])
    func randomListsRoundTrip(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        var encoder = HeaderBlockEncoder()
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        decoder.maxHeaderListSize = 1 << 20
        let names = [":authority", ":path", "authorization", "apns-topic", "apns-id", "x-a", "x-b", "accept", ":status", "cookie"]
        let values = [
            "", "POST", "https", "200", "/", "short", String(repeating: "v", count: 120), String(repeating: "w", count: 1_500),
            String(repeating: "z", count: 4_200), "gzip, deflate",
        ]
        for iteration in 0..<3_000 {
            if iteration % 500 == 250 {
                // SETTINGS_HEADER_TABLE_SIZE from the peer: the decoder allows no more than it.
                let limit = [0, 64, 300, 4_096, 10_000][Int(random.next() % 5)]
                encoder.setPeerTableSizeLimit(limit)
                decoder = try Self.redecoder(decoder, allowing: min(limit, 4_096))
            }
            var headers = HPACKHeaders()
            for _ in 0..<(1 + Int(random.next() % 12)) {
                let name = names[Int(random.next() % UInt64(names.count))]
                var value = values[Int(random.next() % UInt64(values.count))]
                if random.next() % 3 == 0 { value += String(random.next() % 50) }
                let indexing: HPACKIndexing = [.indexable, .indexable, .nonIndexable, .neverIndexed][Int(random.next() % 4)]
                headers.add(name: name, value: value, indexing: indexing)
            }
            let (decoded, _) = try decode(headers, &encoder, &decoder)
            let same = fields(decoded) == fields(headers)
            #expect(same, "seed \(seed) iteration \(iteration): \(headers.count) fields, \(decoded.count) decoded")
        }
    }

    /// A decoder told of a new SETTINGS_HEADER_TABLE_SIZE keeps its table: the encoder's size update
    /// at the start of its next block is what shrinks it.
    private static func redecoder(_ decoder: HPACKDecoder, allowing limit: Int) throws -> HPACKDecoder {
        var decoder = decoder
        decoder.maxDynamicTableLength = limit
        return decoder
    }

    @Test("an entry larger than the table empties it and is not added; the next blocks still decode")
    func oversizedEntryEmptiesTheTable() throws {
        var encoder = HeaderBlockEncoder()
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        let small = HPACKHeaders([("x-a", "1"), ("x-b", "2")])
        let huge = HPACKHeaders([("x-c", String(repeating: "h", count: 5_000))])
        for headers in [small, huge, small, huge, huge, small] {
            let (decoded, _) = try decode(headers, &encoder, &decoder)
            #expect(fields(decoded) == fields(headers))
        }
    }

    @Test("a peer that allows no table gets a size update of 0 once, then literals only")
    func zeroTableSize() throws {
        var encoder = HeaderBlockEncoder()
        encoder.setPeerTableSizeLimit(0)
        var block = ByteBuffer()
        encoder.encode(HPACKHeaders([("x-a", "1")]), to: &block)
        #expect(Array(block.readableBytesView) == [0x20, 0x40, 0x03] + Array("x-a".utf8) + [0x01] + Array("1".utf8))
        block.clear()
        encoder.encode(HPACKHeaders([("x-a", "1")]), to: &block)
        #expect(Array(block.readableBytesView) == [0x40, 0x03] + Array("x-a".utf8) + [0x01] + Array("1".utf8))
        #expect(encoder.maximumTableSize == 0)
    }
}
