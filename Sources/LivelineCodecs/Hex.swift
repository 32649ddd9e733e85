/// Hexadecimal text, written and read byte by byte: `String(format: "%02x")` and
/// `sscanf` cost microseconds per value, and ids are written for every push.
public enum Hex {
    /// The bytes as hex digits, two per byte.
    public static func encode(_ bytes: some Collection<UInt8>, uppercase: Bool = false) -> String {
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
    public static func value(of digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Whether the text is non-empty and only hex digits.
    public static func isHex(_ text: some StringProtocol) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { value(of: $0) != nil }
    }
}
