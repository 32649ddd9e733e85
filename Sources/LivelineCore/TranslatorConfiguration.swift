// Tests: Tests/LivelineCoreTests/GenericDomainTests.swift

/// Everything the translator needs to know: the domains and the input limit.
///
/// JSON keys: `domains` (required), `maxEventBytes` (default 65536), `defaultApp` (default: the
/// first domain's `bundleId`).
public struct TranslatorConfiguration: Hashable, Sendable {
    /// The configured domains.
    public var domains: [DomainConfiguration]
    /// The largest accepted event, in bytes (default 64 KiB).
    public var maxEventBytes: Int
    /// The app of what names none: an api token without an `app` claim, an on-call command
    /// without `--app`, and the rows of a store from before apps were kept apart that no
    /// domain tells the app of.
    public var defaultApp: String

    /// Creates a configuration.
    public init(domains: [DomainConfiguration], maxEventBytes: Int = 64 * 1024, defaultApp: String? = nil) {
        self.domains = domains
        self.maxEventBytes = maxEventBytes
        self.defaultApp = defaultApp ?? domains.first?.bundleId ?? ""
    }

    /// The three built-in domains with their default policies, for one app and the other apps
    /// they serve (``DomainConfiguration/apps``).
    public static func standard(bundleId: String, otherApps: [String] = []) -> TranslatorConfiguration {
        let domains: [DomainConfiguration] = [.ride(bundleId: bundleId), .delivery(bundleId: bundleId), .score(bundleId: bundleId)]
        return TranslatorConfiguration(domains: domains.map { domain in
            var domain = domain
            domain.apps = DomainConfiguration.apps(bundleId, otherApps)
            return domain
        })
    }

    /// How the store names each app's activities, users and topics.
    public var keys: AppKeys { AppKeys(defaultApp: defaultApp) }

    /// Every app a domain serves, each once, in the domains' order.
    public var apps: [String] {
        domains.flatMap(\.apps).reduce(into: []) { apps, app in if !apps.contains(app) { apps.append(app) } }
    }
}

extension TranslatorConfiguration: Codable {
    private enum Keys: String, CodingKey { case domains, maxEventBytes, defaultApp }

    /// Decodes with the documented defaults for absent keys.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        self.init(
            domains: try container.decode([DomainConfiguration].self, forKey: .domains),
            maxEventBytes: try container.decodeIfPresent(Int.self, forKey: .maxEventBytes) ?? 64 * 1024,
            defaultApp: try container.decodeIfPresent(String.self, forKey: .defaultApp)
        )
        if !domains.isEmpty, !apps.contains(defaultApp) {
            throw DecodingError.dataCorruptedError(
                forKey: .defaultApp, in: container,
                debugDescription: "defaultApp \(defaultApp) is no domain's app; the domains serve \(apps.joined(separator: ", "))")
        }
    }

    /// Encodes every key.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(domains, forKey: .domains)
        try container.encode(maxEventBytes, forKey: .maxEventBytes)
        try container.encode(defaultApp, forKey: .defaultApp)
    }
}
