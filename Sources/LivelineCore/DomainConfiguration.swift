// Tests: Tests/LivelineCoreTests/GenericDomainTests.swift

/// One domain: its routing name, contract, ActivityKit type, app and policy.
///
/// A new domain is a new `DomainConfiguration` with `kind: generic`, no code.
///
/// JSON keys: `name`, `kind`, `attributesType`, `bundleId` (required), `apps` (default: only
/// `bundleId`'s), `delivery` (default `deviceTokens`), `shared` (default false), `channel` (default: a
/// ``ChannelPolicy`` that stores nothing and needs iOS 18), `policy` (default: an empty
/// ``DomainPolicy``), and for a generic domain `contentStateVersions` (default: version 1,
/// nothing older; a Swift model declares its own, ``VersionedContentState``).
public struct DomainConfiguration: Hashable, Sendable {
    /// The routing prefix and CloudEvents `type` prefix, e.g. `ride`.
    public var name: String
    /// The content-state contract.
    public var kind: DomainKind
    /// The ActivityKit `attributes-type`: the Swift type name of the app's
    /// `ActivityAttributes`, e.g. `RideAttributes`.
    public var attributesType: String
    /// The app an event is for when it names none (the `bundleid` attribute); the APNs topic
    /// is `<bundle id>.push-type.liveactivity`.
    public var bundleId: String
    /// Every app whose events the domain takes, `bundleId` first: white-label builds of one
    /// app, say, each with its own activities, users and topics (``AppKeys``).
    public var apps: [String]
    /// Device tokens or a broadcast channel.
    public var delivery: DeliveryMode
    /// Whether an activity is shared by many users (a game) rather than owned by one (a
    /// ride). A shared activity has no owner: any user may follow it, its start goes to the
    /// followers of the topics its start event names, and events need no `userId`.
    public var shared: Bool
    /// The broadcast channel's settings, for `delivery: channel`.
    public var channel: ChannelPolicy
    /// The push policy.
    public var policy: DomainPolicy
    /// The content-state versions apps decode, and how the current state becomes each older one.
    public var contentStates: ContentStateVersions

    /// Creates a domain configuration.
    public init(
        name: String, kind: DomainKind, attributesType: String, bundleId: String, apps: [String] = [],
        delivery: DeliveryMode = .deviceTokens, shared: Bool = false, channel: ChannelPolicy = ChannelPolicy(),
        policy: DomainPolicy, contentStates: ContentStateVersions? = nil
    ) {
        self.name = name
        self.kind = kind
        self.attributesType = attributesType
        self.bundleId = bundleId
        self.apps = Self.apps(bundleId, apps)
        self.delivery = delivery
        self.shared = shared
        self.channel = channel
        self.policy = policy
        self.contentStates = kind.modelVersions ?? contentStates ?? ContentStateVersions()
    }

    /// `bundleId`, then each of `others` once.
    static func apps(_ bundleId: String, _ others: [String]) -> [String] {
        others.reduce(into: [bundleId]) { apps, app in if !apps.contains(app) { apps.append(app) } }
    }

    /// Whether the domain takes events for this app.
    public func serves(_ app: String) -> Bool { apps.contains(app) }
}

extension DomainConfiguration: Codable {
    private enum Keys: String, CodingKey {
        case name, kind, attributesType, bundleId, apps, delivery, shared, channel, policy, contentStateVersions
    }

    /// Decodes with the documented defaults for absent keys.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        self.init(
            name: try container.decode(String.self, forKey: .name),
            kind: try container.decode(DomainKind.self, forKey: .kind),
            attributesType: try container.decode(String.self, forKey: .attributesType),
            bundleId: try container.decode(String.self, forKey: .bundleId),
            apps: try container.decodeIfPresent([String].self, forKey: .apps) ?? [],
            delivery: try container.decodeIfPresent(DeliveryMode.self, forKey: .delivery) ?? .deviceTokens,
            shared: try container.decodeIfPresent(Bool.self, forKey: .shared) ?? false,
            channel: try container.decodeIfPresent(ChannelPolicy.self, forKey: .channel) ?? ChannelPolicy(),
            policy: try container.decodeIfPresent(DomainPolicy.self, forKey: .policy) ?? DomainPolicy(),
            contentStates: try container.decodeIfPresent(ContentStateVersions.self, forKey: .contentStateVersions)
        )
        if let app = apps.dropFirst().first(where: { !AppKeys.isBundleID($0) }) {
            throw DecodingError.dataCorruptedError(
                forKey: .apps, in: container, debugDescription: "domain \(name): \(app) is not a bundle id such as com.example.rides")
        }
        if let problem = alertProblem {
            throw DecodingError.dataCorruptedError(forKey: .policy, in: container, debugDescription: "domain \(name): \(problem)")
        }
        if kind != .generic, container.contains(.contentStateVersions) {
            throw DecodingError.dataCorruptedError(
                forKey: .contentStateVersions, in: container,
                debugDescription: "domain \(name): a \(kind.rawValue) domain's versions are declared next to its Swift model")
        }
        if let problem = versionProblem {
            throw DecodingError.dataCorruptedError(
                forKey: .contentStateVersions, in: container, debugDescription: "domain \(name): contentStateVersions: \(problem)")
        }
    }

    /// What is wrong with the domain's content-state versions, or nil.
    public var versionProblem: String? { contentStates.problem(cases: kind.modelCases) }

    /// Why the domain's alerts cannot be sent as configured, or nil: a broadcast carries one
    /// payload for every subscriber, so a channel domain's alerts use loc-keys, not a text per
    /// language; and a Swift model's alerts (text, loc-args, each language) may name only what
    /// the model has, or give a fallback.
    public var alertProblem: String? {
        for (path, alert) in policy.alerts {
            if delivery == .channel, !alert.translations.isEmpty {
                return "policy.\(path) has translations, which a broadcast channel cannot carry: use loc-key"
            }
            guard let example = kind.modelExample else { continue }
            // Rendered on an example whose every field is set: what stays unresolved names nothing.
            let rendering = AlertRendering(message: "message", contentState: example.state, attributes: example.attributes)
            if let name = rendering.unresolved(in: alert).first {
                return "policy.\(path) names {\(name)}, which neither the \(kind.rawValue) content-state nor its attributes have "
                    + "(nor is it message): name a field, or give a fallback as {\(name)|…}"
            }
        }
        return nil
    }

    /// Encodes every key.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(name, forKey: .name)
        try container.encode(kind, forKey: .kind)
        try container.encode(attributesType, forKey: .attributesType)
        try container.encode(bundleId, forKey: .bundleId)
        if apps.count > 1 { try container.encode(Array(apps.dropFirst()), forKey: .apps) }
        try container.encode(delivery, forKey: .delivery)
        try container.encode(shared, forKey: .shared)
        try container.encode(channel, forKey: .channel)
        try container.encode(policy, forKey: .policy)
        if kind == .generic { try container.encode(contentStates, forKey: .contentStateVersions) }
    }
}
