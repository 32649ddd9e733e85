import Configuration
import Foundation
import LivelineAPNs
import LivelineCore

/// Settings of the translator and sender, read under `liveline.` like ``LivelineSettings``.
public struct WorkerSettings: Sendable {
    /// The domains and their policies: the JSON file at `liveline.translator.domains-file`
    /// (a `TranslatorConfiguration`), or the standard ride, delivery and score domains for
    /// `liveline.translator.bundle-id` (default `com.example.liveline`).
    public var translator: TranslatorConfiguration
    /// Where APNs is: `liveline.apns.endpoint` = `production`, `sandbox` (default) or
    /// `host:port` (the simulator, or any APNs-compatible server), trusting
    /// `liveline.apns.ca-file` when set.
    public var apnsEndpoint: APNsEndpoint
    /// The channel management endpoint: production or sandbox to match, or the same
    /// `host:port` as `liveline.apns.endpoint`.
    public var apnsChannelEndpoint: APNsEndpoint
    /// The apps served: `liveline.apns.bundle-ids`, comma-separated; default the translator's.
    public var bundleIDs: [String]
    /// Provider-token credentials: `liveline.apns.team-id`, `liveline.apns.key-id` and the
    /// .p8 key at `liveline.apns.key-file` (or `liveline.apns.key`, secret). One team key
    /// signs for every app of the team.
    public var credentials: Credentials?
    /// `liveline.trace.retention-days`, default 7: how long each activity's trace is kept.
    /// Every translator and sender prunes older lines hourly.
    public var traceRetentionDays: Int
    /// `liveline.keeper.enabled`, default true: the sender also runs the dead-letter keeper,
    /// which moves `liveline.dead` into the store for `liveline dlq`.
    public var keeperEnabled: Bool

    public struct Credentials: Sendable {
        public var teamID: String
        public var keyID: String
        public var privateKeyPEM: String

        public init(teamID: String, keyID: String, privateKeyPEM: String) {
            self.teamID = teamID
            self.keyID = keyID
            self.privateKeyPEM = privateKeyPEM
        }
    }

    public init(config: ConfigReader) throws {
        if let path = config.string(forKey: "translator.domains-file") {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            do {
                translator = try JSONDecoder().decode(TranslatorConfiguration.self, from: data)
            } catch {
                throw SettingsError("liveline.translator.domains-file \(path): \(error)")
            }
        } else {
            translator = .standard(bundleId: config.string(forKey: "translator.bundle-id", default: "com.example.liveline"))
        }

        var trust = APNsEndpoint.Trust.systemDefault
        if let caFile = config.string(forKey: "apns.ca-file") { trust = .caFile(path: caFile) }
        switch config.string(forKey: "apns.endpoint", default: "sandbox") {
        case "production":
            apnsEndpoint = .production
            apnsChannelEndpoint = .channelManagementProduction
        case "sandbox":
            apnsEndpoint = .sandbox
            apnsChannelEndpoint = .channelManagementSandbox
        case let other:
            let parts = other.split(separator: ":")
            guard parts.count == 2, let port = Int(parts[1]), (1...65535).contains(port) else {
                throw SettingsError("liveline.apns.endpoint must be production, sandbox or host:port")
            }
            apnsEndpoint = APNsEndpoint(host: String(parts[0]), port: port, trust: trust)
            apnsChannelEndpoint = apnsEndpoint
        }

        let bundles = config.string(forKey: "apns.bundle-ids").map {
            $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        bundleIDs = bundles ?? Array(Set(translator.domains.map(\.bundleId))).sorted()

        traceRetentionDays = config.int(forKey: "trace.retention-days", default: 7)
        guard traceRetentionDays >= 1 else {
            throw SettingsError("liveline.trace.retention-days must be at least 1 (days)")
        }
        keeperEnabled = config.bool(forKey: "keeper.enabled", default: true)

        let key = try LivelineSettings.secret(config, "apns.key")
        if let teamID = config.string(forKey: "apns.team-id"), let keyID = config.string(forKey: "apns.key-id"),
            let key
        {
            credentials = Credentials(teamID: teamID, keyID: keyID, privateKeyPEM: key)
        } else {
            credentials = nil
        }
    }

    /// How long trace lines are kept.
    public var traceRetention: Duration { .seconds(traceRetentionDays * 86_400) }

    /// One APNs client configuration per app.
    public func clientConfigurations(credentials: Credentials) -> [APNsClientConfiguration] {
        bundleIDs.map {
            APNsClientConfiguration(
                bundleID: $0, teamID: credentials.teamID, keyID: credentials.keyID,
                privateKeyPEM: credentials.privateKeyPEM, endpoint: apnsEndpoint,
                channelManagementEndpoint: apnsChannelEndpoint)
        }
    }
}
