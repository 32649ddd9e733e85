// Tests: Tests/LivelineCoreTests/GenericDomainTests.swift

/// One domain: its routing name, contract, ActivityKit type, app and policy.
///
/// A new domain is a new `DomainConfiguration` with `kind: generic`, no code.
///
/// JSON keys: `name`, `kind`, `attributesType`, `bundleId` (required), `delivery`
/// (default `deviceTokens`), `shared` (default false), `channel` (default: a
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
    /// The app's bundle id; the APNs topic is `<bundleId>.push-type.liveactivity`.
    public var bundleId: String
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
        name: String, kind: DomainKind, attributesType: String, bundleId: String, delivery: DeliveryMode = .deviceTokens,
        shared: Bool = false, channel: ChannelPolicy = ChannelPolicy(), policy: DomainPolicy,
        contentStates: ContentStateVersions? = nil
    ) {
        self.name = name
        self.kind = kind
        self.attributesType = attributesType
        self.bundleId = bundleId
        self.delivery = delivery
        self.shared = shared
        self.channel = channel
        self.policy = policy
        self.contentStates = kind.modelVersions ?? contentStates ?? ContentStateVersions()
    }

    /// The `apns-topic` for device-token pushes.
    public var apnsTopic: String { "\(bundleId).push-type.liveactivity" }
}

extension DomainConfiguration: Codable {
    private enum Keys: String, CodingKey { case name, kind, attributesType, bundleId, delivery, shared, channel, policy, contentStateVersions }

    /// Decodes with the documented defaults for absent keys.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        self.init(
            name: try container.decode(String.self, forKey: .name),
            kind: try container.decode(DomainKind.self, forKey: .kind),
            attributesType: try container.decode(String.self, forKey: .attributesType),
            bundleId: try container.decode(String.self, forKey: .bundleId),
            delivery: try container.decodeIfPresent(DeliveryMode.self, forKey: .delivery) ?? .deviceTokens,
            shared: try container.decodeIfPresent(Bool.self, forKey: .shared) ?? false,
            channel: try container.decodeIfPresent(ChannelPolicy.self, forKey: .channel) ?? ChannelPolicy(),
            policy: try container.decodeIfPresent(DomainPolicy.self, forKey: .policy) ?? DomainPolicy(),
            contentStates: try container.decodeIfPresent(ContentStateVersions.self, forKey: .contentStateVersions)
        )
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
        try container.encode(delivery, forKey: .delivery)
        try container.encode(shared, forKey: .shared)
        try container.encode(channel, forKey: .channel)
        try container.encode(policy, forKey: .policy)
        if kind == .generic { try container.encode(contentStates, forKey: .contentStateVersions) }
    }
}
