/// SHA-1 (FIPS 180-4), used only to derive stable identifiers: job ids and
/// name-based (version 5) UUIDs for `apns-id`. Not used for security, which is why
/// SHA-1 is acceptable; CryptoKit is not available on Linux and swift-crypto would be
/// a dependency for a few lines.
enum SHA1 {
    static func hash(_ message: [UInt8]) -> [UInt8] {
        var state: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0)
        var padded = message
        padded.reserveCapacity(message.count + 72)
        padded.append(0x80)
        while padded.count % 64 != 56 { padded.append(0) }
        let bitLength = UInt64(message.count) &* 8
        for shift in stride(from: 56, through: 0, by: -8) { padded.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }

        // The message schedule lives on the stack: an array per call was a third of the cost
        // of the two hashes every push job needs.
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 80) { words in
            for chunkStart in stride(from: 0, to: padded.count, by: 64) {
                for index in 0..<16 {
                    let base = chunkStart + index * 4
                    words[index] = UInt32(padded[base]) << 24 | UInt32(padded[base + 1]) << 16
                        | UInt32(padded[base + 2]) << 8 | UInt32(padded[base + 3])
                }
                for index in 16..<80 {
                    let mixed = words[index - 3] ^ words[index - 8] ^ words[index - 14] ^ words[index - 16]
                    words[index] = mixed << 1 | mixed >> 31
                }
                var (a, b, c, d, e) = state
                for index in 0..<80 {
                    let (f, k): (UInt32, UInt32)
                    switch index {
                    case 0..<20: (f, k) = ((b & c) | (~b & d), 0x5A82_7999)
                    case 20..<40: (f, k) = (b ^ c ^ d, 0x6ED9_EBA1)
                    case 40..<60: (f, k) = ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
                    default: (f, k) = (b ^ c ^ d, 0xCA62_C1D6)
                    }
                    let temp = (a << 5 | a >> 27) &+ f &+ e &+ k &+ words[index]
                    e = d
                    d = c
                    c = b << 30 | b >> 2
                    b = a
                    a = temp
                }
                state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d, state.4 &+ e)
            }
        }
        var digest: [UInt8] = []
        digest.reserveCapacity(20)
        for word in [state.0, state.1, state.2, state.3, state.4] {
            digest.append(UInt8(word >> 24))
            digest.append(UInt8(truncatingIfNeeded: word >> 16))
            digest.append(UInt8(truncatingIfNeeded: word >> 8))
            digest.append(UInt8(truncatingIfNeeded: word))
        }
        return digest
    }

    static func hex(_ bytes: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { buffer in
            let digits: StaticString = "0123456789abcdef"
            digits.withUTF8Buffer { digits in
                for (index, byte) in bytes.enumerated() {
                    buffer[2 * index] = digits[Int(byte >> 4)]
                    buffer[2 * index + 1] = digits[Int(byte & 0x0F)]
                }
            }
            return bytes.count * 2
        }
    }
}
