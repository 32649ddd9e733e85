import CRabbitMQ
import Foundation

/// Gives back the same `String` for byte strings that recur on every message, header names
/// and content types, instead of a new one each time: a string over 15 bytes is a heap
/// allocation, and a push job carries six such names. A small table indexed by a hash of the
/// bytes, where a new string takes the place of the old; confined, like its connection, to
/// one thread.
struct StringInterner {
    private var slots = [String?](repeating: nil, count: 256)

    mutating func string(_ bytes: amqp_bytes_t) -> String {
        guard let pointer = bytes.bytes, bytes.len > 0 else { return "" }
        return string(UnsafeRawBufferPointer(start: pointer, count: bytes.len))
    }

    mutating func string(_ raw: UnsafeRawBufferPointer) -> String {
        // Up to 15 bytes a String stores inline, and long ones are rarely names.
        guard (16...64).contains(raw.count) else { return String(decoding: raw, as: UTF8.self) }
        var hash: UInt32 = 2_166_136_261  // FNV-1a
        for byte in raw { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        let slot = Int(hash & 255)
        if let known = slots[slot], Self.equal(known, raw) { return known }
        let string = String(decoding: raw, as: UTF8.self)
        slots[slot] = string
        return string
    }

    /// Compares the bytes in place: `utf8.elementsEqual` walks both a byte at a time through
    /// the generic iterators, about 1,000 instructions for a 20-byte name (a sixth of reading
    /// a delivery's properties).
    private static func equal(_ known: String, _ raw: UnsafeRawBufferPointer) -> Bool {
        known.utf8.withContiguousStorageIfAvailable { stored in
            stored.count == raw.count && memcmp(stored.baseAddress!, raw.baseAddress!, raw.count) == 0
        } ?? known.utf8.elementsEqual(raw)
    }
}
