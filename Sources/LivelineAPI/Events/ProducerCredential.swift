import Crypto
import Foundation
import Hummingbird
import LivelineCodecs

// Tests: Tests/LivelineRuntimeTests/ProducerSettingsTests.swift, Tests/LivelineRuntimeTests/EventIntakeTests.swift

/// A producer allowed to send events over HTTPS: its name, the SHA-256 of its key, and the
/// domains it may publish. The api keeps only the digest, so its settings hold no key.
public struct ProducerCredential: Sendable, Hashable, Codable {
    /// Names the producer in logs, metrics and the idempotency records, e.g. `rides`.
    public var name: String
    /// The SHA-256 of the producer's key, in lower-case hex.
    public var keySHA256: String
    /// The domains it may publish (`ride`), or `*` for all.
    public var domains: [String]

    public init(name: String, keySHA256: String, domains: [String]) {
        self.name = name
        self.keySHA256 = keySHA256.lowercased()
        self.domains = domains
    }

    /// Whether `name` can name a producer: 1 to 64 letters, digits, `-`, `_` or `.`.
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 64 && name.allSatisfy { $0.isLetter || $0.isNumber || "-_.".contains($0) }
    }

    /// Whether it may publish events of `domain`.
    public func mayPublish(_ domain: String) -> Bool {
        domains.contains("*") || domains.contains(domain)
    }

    /// The digest the settings keep for `key`.
    public static func digest(ofKey key: String) -> String {
        Hex.encode(Array(SHA256.hash(data: Data(key.utf8))))
    }

    /// A new random key: 32 bytes in base64url, prefixed so a leaked one is recognisable.
    public static func newKey() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return "llp_" + Base64URL.encode(bytes)
    }
}

/// Finds the producer behind `Authorization: Bearer <key>`. Keys are looked up by their
/// digest, so the comparison never runs over the key itself.
struct ProducerAuthenticator: Sendable {
    private let byDigest: [String: ProducerCredential]

    init(_ producers: [ProducerCredential]) {
        byDigest = Dictionary(producers.map { ($0.keySHA256, $0) }, uniquingKeysWith: { first, _ in first })
    }

    func authenticate(_ request: Request) throws -> ProducerCredential {
        let key = try BearerAuthenticator.credential(of: request, missing: "a producer key is required: Authorization: Bearer <key>")
        guard let producer = byDigest[ProducerCredential.digest(ofKey: key)] else {
            throw APIError.unauthorized("the producer key is not known (an app's user token is not a producer key)")
        }
        return producer
    }
}
