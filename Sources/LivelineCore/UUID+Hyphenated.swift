import Foundation

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
                    if byte == 4 || byte == 6 || byte == 8 || byte == 10 {
                        guard text[index] == UInt8(ascii: "-") else { return false }
                        index += 1
                    }
                    guard let high = Self.hexValue(text[index]), let low = Self.hexValue(text[index + 1]) else { return false }
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

    private static func hexValue(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
