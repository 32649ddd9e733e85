// Tests: Tests/LivelineCoreTests/GenericDomainTests.swift

/// Everything the translator needs to know: the domains and the input limit.
///
/// JSON keys: `domains` (required), `maxEventBytes` (default 65536).
public struct TranslatorConfiguration: Hashable, Sendable {
    /// The configured domains.
    public var domains: [DomainConfiguration]
    /// The largest accepted event, in bytes (default 64 KiB).
    public var maxEventBytes: Int

    /// Creates a configuration.
    public init(domains: [DomainConfiguration], maxEventBytes: Int = 64 * 1024) {
        self.domains = domains
        self.maxEventBytes = maxEventBytes
    }

    /// The three built-in domains with their default policies, for one app.
    public static func standard(bundleId: String) -> TranslatorConfiguration {
        TranslatorConfiguration(domains: [
            .ride(bundleId: bundleId), .delivery(bundleId: bundleId), .score(bundleId: bundleId),
        ])
    }
}

extension TranslatorConfiguration: Codable {
    private enum Keys: String, CodingKey { case domains, maxEventBytes }

    /// Decodes with the documented defaults for absent keys.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        self.init(
            domains: try container.decode([DomainConfiguration].self, forKey: .domains),
            maxEventBytes: try container.decodeIfPresent(Int.self, forKey: .maxEventBytes) ?? 64 * 1024
        )
    }

    /// Encodes every key.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(domains, forKey: .domains)
        try container.encode(maxEventBytes, forKey: .maxEventBytes)
    }
}
