import Foundation

// Tests: Tests/LivelineCoreTests/PushJobTests.swift, Tests/LivelineAPNsTests/ModelTests.swift

extension UUID {
    /// Parses the 8-4-4-4-12 hex form, in either case, as `UUID(uuidString:)` does, without
    /// its `sscanf`: that was 2 % of the sender's CPU, one job id per push.
    public init?(hyphenated string: String) {
        var string = string
        let parsed: uuid_t? = string.withUTF8 { text in
            guard text.count == 36 else { return nil }
            var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            let valid = withUnsafeMutableBytes(of: &uuid) { bytes -> Bool in
                var index = 0
                for byte in 0..<16 {
                    if Self.hyphenBefore(byte) {
                        guard text[index] == UInt8(ascii: "-") else { return false }
                        index += 1
                    }
                    guard let high = Hex.value(of: text[index]), let low = Hex.value(of: text[index + 1]) else { return false }
                    bytes[byte] = high << 4 | low
                    index += 2
                }
                return true
            }
            return valid ? uuid : nil
        }
        guard let parsed else { return nil }
        self.init(uuid: parsed)
    }

    /// The 8-4-4-4-12 form, like `uuidString` (upper case, as APNs echoes `apns-id`) or in
    /// lower case, without going through `sprintf` (measurable at tens of thousands of pushes
    /// per second).
    public func hyphenated(uppercase: Bool = true) -> String {
        let digits: StaticString = uppercase ? "0123456789ABCDEF" : "0123456789abcdef"
        return withUnsafeBytes(of: uuid) { raw in
            String(unsafeUninitializedCapacity: 36) { buffer in
                digits.withUTF8Buffer { digits in
                    var out = 0
                    for (index, byte) in raw.enumerated() {
                        if Self.hyphenBefore(index) {
                            buffer[out] = UInt8(ascii: "-")
                            out += 1
                        }
                        buffer[out] = digits[Int(byte >> 4)]
                        buffer[out + 1] = digits[Int(byte & 0x0F)]
                        out += 2
                    }
                }
                return 36
            }
        }
    }

    /// The groups are 4, 2, 2, 2 and 6 bytes long.
    private static func hyphenBefore(_ byte: Int) -> Bool {
        byte == 4 || byte == 6 || byte == 8 || byte == 10
    }
}
