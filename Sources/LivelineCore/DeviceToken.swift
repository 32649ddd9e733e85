/// APNs device tokens as the apps register them: hex text.
enum DeviceToken {
    /// Non-empty, even-length lowercase hex, at most 200 bytes (APNs tokens are 32
    /// bytes today but Apple reserves the right to grow them).
    static func isValid(_ token: String) -> Bool {
        !token.isEmpty && token.utf8.count % 2 == 0 && token.utf8.count <= 400
            && token.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}
