// Tests: Tests/LivelineCoreTests/PrimitivesTests.swift, Tests/LivelineCoreTests/TargetingTests.swift

/// APNs device tokens as the apps register them: hex text.
package enum DeviceToken {
    /// Non-empty, even-length lowercase hex, at most 200 bytes (APNs tokens are 32
    /// bytes today but Apple reserves the right to grow them).
    static func isValid(_ token: String) -> Bool {
        !token.isEmpty && token.utf8.count % 2 == 0 && token.utf8.count <= 400
            && token.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// `token.lowercased()`: without Unicode's tables when the token is ASCII (a real one is
    /// hex), and without a new string when it is lowercase already. Tokens are lowercased on
    /// every event for every target, and `lowercased()` was a few thousand instructions each.
    package static func lowercased(_ token: String) -> String {
        var token = token
        let hasUppercase: Bool? = token.withUTF8 { bytes in
            var upper = false
            for byte in bytes {
                if byte >= 0x80 { return nil }
                if byte &- UInt8(ascii: "A") < 26 { upper = true }
            }
            return upper
        }
        switch hasUppercase {
        case false: return token
        case true:
            return token.withUTF8 { bytes in
                String(unsafeUninitializedCapacity: bytes.count) { lowered in
                    for (index, byte) in bytes.enumerated() {
                        lowered[index] = byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
                    }
                    return bytes.count
                }
            }
        case nil: return token.lowercased()
        }
    }
}
