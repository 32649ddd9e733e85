import NIOCore
import NIOHPACK

/// Encodes header lists as HPACK header blocks (RFC 7541), for one connection's direction.
///
/// Our own rather than NIO's `HPACKEncoder`, which cost the sender 16,600 instructions a push
/// (7 % of it): it hashes every name into its tables and copies each field into its own
/// storage. A push's header block has ten fields, most the same on every push, so here:
/// - a field in the static table (`:method: POST`, `:scheme: https`) is its index, one byte;
/// - an indexable field is looked for in the dynamic table, a handful of entries compared
///   newest first (the provider token, the topic, the host), and sent as its index once there;
/// - any other field is a literal whose name is an index when a table has the name, with
///   incremental indexing when the field is indexable, without it when it is not (the
///   device token's path, the apns-id), and never-indexed when it is marked so.
/// Strings are never Huffman-coded: APNs' tokens and ids gain little from it, and it costs CPU.
///
/// The dynamic table follows §4: an entry costs its name and value plus 32 bytes, the oldest go
/// first when a new one would not fit, and its size never passes what the peer's decoder allows
/// (SETTINGS_HEADER_TABLE_SIZE, at most 4,096 here). A change of size is announced at the start
/// of the next block (§6.3), as the decoder expects.
package struct HeaderBlockEncoder {
    /// The table size both ends start from (RFC 7540 §6.5.2), and the most this encoder uses.
    package static let defaultTableSize = 4_096

    private struct Entry {
        var name: String
        var value: String
        var size: Int { name.utf8.count + value.utf8.count + 32 }
    }

    /// Oldest first: the newest entry has index 62.
    private var entries: [Entry] = []
    private var tableSize = 0
    package private(set) var maximumTableSize = HeaderBlockEncoder.defaultTableSize
    /// A size change the peer's decoder has not been told of yet.
    private var pendingSizeUpdate: Int?

    package init() {}

    /// The peer's SETTINGS_HEADER_TABLE_SIZE: the table shrinks to it at once, and the next block
    /// starts with the new size.
    package mutating func setPeerTableSizeLimit(_ limit: Int) {
        let size = min(max(limit, 0), Self.defaultTableSize)
        guard size != maximumTableSize else { return }
        maximumTableSize = size
        evict(toFit: 0)
        pendingSizeUpdate = size
    }

    /// Appends the block for `headers` to `buffer`.
    package mutating func encode(_ headers: HPACKHeaders, to buffer: inout ByteBuffer) {
        encode(HeaderFields(headers), to: &buffer)
    }

    /// Appends the block for `headers` to `buffer`.
    package mutating func encode(_ headers: HeaderFields, to buffer: inout ByteBuffer) {
        if let size = pendingSizeUpdate {
            Self.writeInteger(size, prefixBits: 5, flags: 0x20, to: &buffer)  // dynamic table size update
            pendingSizeUpdate = nil
        }
        let fields = headers.fields
        // Every field's representation first (they change the dynamic table), then the whole
        // block in one reservation with raw stores: ByteBuffer's own writes cost 280 instructions
        // each, five or six of them a field, and a reservation per field cost a dynamic
        // exclusivity check and a uniqueness check each. The write closure touches nothing of
        // `self`, which would cost another check.
        withUnsafeTemporaryAllocation(of: Representation.self, capacity: fields.count) { representations in
            var most = 0
            for index in fields.indices {
                representations.initializeElement(at: index, to: represent(fields[index]))
                most += fields[index].name.text.utf8.count + fields[index].value.utf8.count + 3 * Self.longestInteger
            }
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: most) { bytes in
                var field = FieldWriter(bytes.baseAddress!)
                for index in fields.indices {
                    switch representations[index] {
                    case .indexed(let index):
                        field.integer(index, prefixBits: 7, flags: 0x80)
                    case .literal(let nameIndex, let prefixBits, let flags):
                        field.integer(nameIndex, prefixBits: prefixBits, flags: flags)
                        if nameIndex == 0 { field.string(fields[index].name.text) }
                        field.string(fields[index].value)
                    }
                }
                return field.count
            }
        }
    }

    /// The most bytes an integer of this encoder takes with its prefix (sizes below 2^28).
    private static let longestInteger = 5

    private enum Representation {
        /// An indexed field (§6.1).
        case indexed(Int)
        /// A literal (§6.2), its name by index (0: the name follows as a literal).
        case literal(nameIndex: Int, prefixBits: Int, flags: UInt8)
    }

    /// How to send a field; an indexable literal enters the dynamic table here.
    private mutating func represent(_ header: HeaderFields.Field) -> Representation {
        let (name, value, indexing) = (header.name.text, header.value, header.indexing)
        // A never-indexed field stays a literal, flag and all, for every hop after this one.
        if indexing != .neverIndexed,
            let index = StaticTable.index(of: value, from: header.name.staticIndex, count: header.name.staticCount)
        {
            return .indexed(index)
        }
        var nameIndex = header.name.staticIndex
        if indexing == .indexable || nameIndex == 0 {
            switch dynamicLookup(name: name, value: value, fieldWanted: indexing == .indexable) {
            case .field(let index):
                return .indexed(index)
            case .name(let index) where nameIndex == 0:
                nameIndex = index
            case .name, .none:
                break
            }
        }
        switch indexing {
        case .indexable:
            insert(Entry(name: name, value: value))
            return .literal(nameIndex: nameIndex, prefixBits: 6, flags: 0x40)  // incremental indexing
        case .nonIndexable:
            return .literal(nameIndex: nameIndex, prefixBits: 4, flags: 0x00)  // without indexing
        case .neverIndexed:
            return .literal(nameIndex: nameIndex, prefixBits: 4, flags: 0x10)  // never indexed
        }
    }

    /// Stores a field's bytes where the buffer reserved room for them.
    private struct FieldWriter {
        let start: UnsafeMutableRawPointer
        var count = 0

        init(_ start: UnsafeMutableRawPointer) { self.start = start }

        mutating func byte(_ value: UInt8) {
            start.storeBytes(of: value, toByteOffset: count, as: UInt8.self)
            count += 1
        }

        mutating func integer(_ value: Int, prefixBits: Int, flags: UInt8) {
            let limit = (1 << prefixBits) - 1
            guard value >= limit else { return byte(flags | UInt8(value)) }
            byte(flags | UInt8(limit))
            var rest = value - limit
            while rest >= 128 {
                byte(UInt8(rest & 0x7F | 0x80))
                rest >>= 7
            }
            byte(UInt8(rest))
        }

        mutating func string(_ text: String) {
            var text = text
            text.withUTF8 { utf8 in
                integer(utf8.count, prefixBits: 7, flags: 0x00)  // H = 0: not Huffman-coded
                if let base = utf8.baseAddress { (start + count).copyMemory(from: base, byteCount: utf8.count) }
                count += utf8.count
            }
        }
    }

    private enum DynamicMatch {
        case field(Int)
        case name(Int)
        case none
    }

    /// The newest entry with this name and value, or else the newest with this name. A field that
    /// is not to be indexed only wants a name (its value is sent as a literal).
    private func dynamicLookup(name: String, value: String, fieldWanted: Bool) -> DynamicMatch {
        var nameMatch = DynamicMatch.none
        // By position, newest first: `reversed()` copied each entry out, two retains and releases.
        var position = entries.count
        while position > 0 {
            position -= 1
            guard same(entries[position].name, name) else { continue }
            let index = 62 + entries.count - 1 - position
            if !fieldWanted { return .name(index) }
            if same(entries[position].value, value) { return .field(index) }
            if case .none = nameMatch { nameMatch = .name(index) }
        }
        return nameMatch
    }

    private mutating func insert(_ entry: Entry) {
        let size = entry.size
        guard size <= maximumTableSize else {
            // §4.4: an entry larger than the table empties it and is not added.
            entries.removeAll(keepingCapacity: true)
            tableSize = 0
            return
        }
        evict(toFit: size)
        entries.append(entry)
        tableSize += size
    }

    private mutating func evict(toFit size: Int) {
        var oldest = 0
        while tableSize + size > maximumTableSize, oldest < entries.count {
            tableSize -= entries[oldest].size
            oldest += 1
        }
        if oldest > 0 { entries.removeFirst(oldest) }
    }

    /// A string literal, not Huffman-coded (§5.2).
    package static func writeString(_ string: String, to buffer: inout ByteBuffer) {
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: string.utf8.count + longestInteger) { bytes in
            var field = FieldWriter(bytes.baseAddress!)
            field.string(string)
            return field.count
        }
    }

    /// An integer with an N-bit prefix (§5.1); `flags` are the bits above the prefix.
    package static func writeInteger(_ value: Int, prefixBits: Int, flags: UInt8, to buffer: inout ByteBuffer) {
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: longestInteger) { bytes in
            var field = FieldWriter(bytes.baseAddress!)
            field.integer(value, prefixBits: prefixBits, flags: flags)
            return field.count
        }
    }
}

/// RFC 7541 Appendix A, by name: each name's first index, and the indexes of the values it has.
enum StaticTable {
    static let entries: [(name: String, value: String)] = [
        (":authority", ""), (":method", "GET"), (":method", "POST"), (":path", "/"), (":path", "/index.html"),
        (":scheme", "http"), (":scheme", "https"), (":status", "200"), (":status", "204"), (":status", "206"),
        (":status", "304"), (":status", "400"), (":status", "404"), (":status", "500"), ("accept-charset", ""),
        ("accept-encoding", "gzip, deflate"), ("accept-language", ""), ("accept-ranges", ""), ("accept", ""),
        ("access-control-allow-origin", ""), ("age", ""), ("allow", ""), ("authorization", ""), ("cache-control", ""),
        ("content-disposition", ""), ("content-encoding", ""), ("content-language", ""), ("content-length", ""),
        ("content-location", ""), ("content-range", ""), ("content-type", ""), ("cookie", ""), ("date", ""),
        ("etag", ""), ("expect", ""), ("expires", ""), ("from", ""), ("host", ""), ("if-match", ""),
        ("if-modified-since", ""), ("if-none-match", ""), ("if-range", ""), ("if-unmodified-since", ""),
        ("last-modified", ""), ("link", ""), ("location", ""), ("max-forwards", ""), ("proxy-authenticate", ""),
        ("proxy-authorization", ""), ("range", ""), ("referer", ""), ("refresh", ""), ("retry-after", ""),
        ("server", ""), ("set-cookie", ""), ("strict-transport-security", ""), ("transfer-encoding", ""),
        ("user-agent", ""), ("vary", ""), ("via", ""), ("www-authenticate", ""),
    ]

    /// Where the table has `name`: the index of its first entry and how many entries have it
    /// (the table keeps a name's entries together); (0, 0) when it has none.
    static func lookup(name: String) -> (index: Int, count: Int) {
        guard let first = entries.firstIndex(where: { $0.name == name }) else { return (0, 0) }
        let count = entries[first...].prefix { $0.name == name }.count
        return (first + 1, count)
    }

    /// The index of the entry with this value among a name's `count` entries from `index`; nil
    /// for none. Entries with an empty value are never matched: a field with an empty value is
    /// rare, and sending it as a literal is as correct as by its index.
    @inline(__always)
    static func index(of value: String, from index: Int, count: Int) -> Int? {
        guard !value.isEmpty else { return nil }
        for candidate in index..<index + count where same(entries[candidate - 1].value, value) { return candidate }
        return nil
    }
}

/// Strings compared by length first, which tells most apart in a few instructions where `==`
/// alone costs about a hundred.
@inline(__always)
func same(_ text: String, _ other: String) -> Bool {
    text.utf8.count == other.utf8.count && text == other
}
