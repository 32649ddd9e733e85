// Tests: Tests/LivelineCoreTests/PushJobTests.swift, Tests/LivelineAPNsTests/DevicePushTests.swift, Tests/LivelineRuntimeTests/ProducerSettingsTests.swift

/// Hexadecimal text, written and read byte by byte: `String(format: "%02x")` and
/// `sscanf` cost microseconds per value, and ids are written for every push.
///
/// Inlinable: the functions are generic, and a caller in another module would otherwise run
/// them unspecialized, a witness call per byte (measured: checking each push's device token
/// in the client and the simulator took 4 % of apns-bench's CPU that way).
public enum Hex {
    /// The bytes as hex digits, two per byte.
    @inlinable public static func encode(_ bytes: some Collection<UInt8>, uppercase: Bool = false) -> String {
        let digits: StaticString = uppercase ? "0123456789ABCDEF" : "0123456789abcdef"
        return String(unsafeUninitializedCapacity: bytes.count * 2) { buffer in
            digits.withUTF8Buffer { digits in
                var out = 0
                for byte in bytes {
                    buffer[out] = digits[Int(byte >> 4)]
                    buffer[out + 1] = digits[Int(byte & 0x0F)]
                    out += 2
                }
            }
            return bytes.count * 2
        }
    }

    /// The value of one hex digit, in either case; `nil` for any other byte.
    @inlinable public static func value(of digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Whether the text is non-empty and only hex digits.
    @inlinable public static func isHex(_ text: some StringProtocol) -> Bool {
        // A native string's bytes are contiguous: read them in place, not index by index.
        let utf8 = text.utf8
        return !utf8.isEmpty
            && (utf8.withContiguousStorageIfAvailable { $0.allSatisfy { value(of: $0) != nil } }
                ?? utf8.allSatisfy { value(of: $0) != nil })
    }
}
