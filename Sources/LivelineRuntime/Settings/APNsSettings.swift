import Configuration
import Foundation
import LivelineAPNs
import LivelineCore
import LivelineModels
import LivelineServices
import Logging

/// The apps a sender pushes for and where APNs is: ``Setting/apps`` and, for each app,
/// ``Setting/appBundleID``, ``Setting/appTeamID``, ``Setting/appKeyID``, ``Setting/appKey``
/// and ``Setting/appEnvironment``; ``Setting/productionEndpoint``, ``Setting/sandboxEndpoint``
/// or ``Setting/endpoint``, trusting ``Setting/caFile`` when set.
///
/// Every mistake is refused here, before anything is consumed, with a message that names
/// the key and never a secret.
public struct APNsSettings: Sendable {
    /// One app's credentials.
    public struct App: Sendable {
        /// Its name in `liveline.apps`.
        public var name: String
        public var bundleID: String
        public var teamID: String
        public var keyID: String
        /// The .p8 key's text. Never logged.
        public var privateKeyPEM: String
        /// Where its broadcast channels live.
        public var channelEnvironment: APNsEnvironment
    }

    /// Where one environment's pushes and channel management requests go.
    public struct Hosts: Sendable, Hashable {
        public var push: APNsEndpoint
        public var channelManagement: APNsEndpoint
    }

    public var apps: [App]
    public var production: Hosts
    public var sandbox: Hosts

    public init(config: ConfigReader) throws {
        var trust = APNsEndpoint.Trust.systemDefault
        if let caFile = Setting.caFile.text(config) {
            guard FileManager.default.isReadableFile(atPath: caFile) else {
                throw SettingsError("\(Setting.caFile.name): cannot read \(caFile)")
            }
            trust = .caFile(path: caFile)
        }
        let both = try Self.endpoint(config, .endpoint, trust: trust)
        production = try Self.endpoint(config, .productionEndpoint, trust: trust).map(Self.hosts)
            ?? both.map(Self.hosts) ?? Hosts(push: .production, channelManagement: .channelManagementProduction)
        sandbox = try Self.endpoint(config, .sandboxEndpoint, trust: trust).map(Self.hosts)
            ?? both.map(Self.hosts) ?? Hosts(push: .sandbox, channelManagement: .channelManagementSandbox)

        let names = Setting.apps.list(config)
        guard !names.isEmpty else {
            throw SettingsError("""
                liveline.apps: no apps to push for. Name them (LIVELINE_APPS=rides,scores) and give each its \
                credentials: LIVELINE_APP_RIDES_BUNDLE_ID, _TEAM_ID, _KEY_ID, _KEY_FILE (the .p8 key) and \
                _ENVIRONMENT (production or sandbox)
                """)
        }
        var apps: [App] = []
        for name in names {
            let app = try Self.app(named: name, config)
            if let other = apps.first(where: { $0.bundleID == app.bundleID }) {
                throw SettingsError(
                    "\(Setting.appBundleID.name(app: name)): \(app.bundleID) is also app \(other.name)'s; list each app once")
            }
            if let other = apps.first(where: { $0.keyID == app.keyID }),
                other.teamID != app.teamID || other.privateKeyPEM != app.privateKeyPEM
            {
                throw SettingsError("""
                    \(Setting.appKeyID.name(app: name)): key \(app.keyID) is app \(other.name)'s with a different team id or \
                    key file; apps that share a key give the same team id and key
                    """)
            }
            apps.append(app)
        }
        self.apps = apps
    }

    /// One signer per key, shared by every app and environment that uses it, so one
    /// provider token is minted per key; then a client per app and environment.
    public func clients(logger: Logger) throws -> APNsClientDirectory {
        var signers: [String: APNsTokenSigner] = [:]
        var directory: [APNsClientDirectory.App] = []
        for app in apps {
            let signer: APNsTokenSigner
            if let shared = signers[app.keyID] {
                signer = shared
            } else {
                do {
                    signer = try APNsTokenSigner(teamID: app.teamID, keyID: app.keyID, privateKeyPEM: app.privateKeyPEM)
                } catch {
                    throw SettingsError(
                        "\(Setting.appKey.name(app: app.name))-file: not a .p8 signing key (PKCS#8 PEM of a P-256 key)")
                }
                signers[app.keyID] = signer
            }
            func client(_ hosts: Hosts) throws -> APNsClient {
                try APNsClient(
                    configuration: APNsClientConfiguration(
                        bundleID: app.bundleID, teamID: app.teamID, keyID: app.keyID, privateKeyPEM: app.privateKeyPEM,
                        endpoint: hosts.push, channelManagementEndpoint: hosts.channelManagement),
                    tokenSigner: signer, logger: logger)
            }
            directory.append(.init(
                bundleID: app.bundleID, channelEnvironment: app.channelEnvironment,
                production: try client(production), sandbox: try client(sandbox)))
        }
        return APNsClientDirectory(directory)
    }

    private static func app(named name: String, _ config: ConfigReader) throws -> App {
        guard name.utf8.allSatisfy({ isAlphanumeric($0) && !(UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) else {
            throw SettingsError("\(Setting.apps.name): \(name) is not an app name (lower-case letters and digits, e.g. rides)")
        }
        func required(_ setting: Setting, _ hint: String) throws -> String {
            guard let value = setting.text(config, app: name), !value.isEmpty else {
                throw SettingsError("\(setting.name(app: name)) is missing: \(hint)")
            }
            return value
        }
        let bundleID = try required(.appBundleID, "the app's bundle id, e.g. com.example.rides")
        guard AppKeys.isBundleID(bundleID) else {
            throw SettingsError("""
                \(Setting.appBundleID.name(app: name)): \(bundleID) is not a bundle id (reverse-DNS: two or more parts of \
                letters, digits and hyphens joined by dots, e.g. com.example.rides)
                """)
        }
        let teamID = try required(.appTeamID, "the 10-character Apple developer team id")
        guard isAppleID(teamID) else {
            throw SettingsError("\(Setting.appTeamID.name(app: name)): \(teamID) is not a team id (10 upper-case letters and digits)")
        }
        let keyID = try required(.appKeyID, "the 10-character id of the .p8 key")
        guard isAppleID(keyID) else {
            throw SettingsError("\(Setting.appKeyID.name(app: name)): \(keyID) is not a key id (10 upper-case letters and digits)")
        }
        guard let key = try Setting.appKey.secret(config, app: name) else {
            throw SettingsError("\(Setting.appKey.name(app: name))-file is missing: the path of the app's .p8 key")
        }
        let environmentText = Setting.appEnvironment.text(config, app: name)!
        guard let environment = APNsEnvironment(rawValue: environmentText) else {
            throw SettingsError("\(Setting.appEnvironment.name(app: name)): \(environmentText) is not production or sandbox")
        }
        return App(
            name: name, bundleID: bundleID, teamID: teamID, keyID: keyID, privateKeyPEM: key,
            channelEnvironment: environment)
    }

    /// `host:port` at `setting`, nil when unset.
    private static func endpoint(_ config: ConfigReader, _ setting: Setting, trust: APNsEndpoint.Trust) throws -> APNsEndpoint? {
        guard let text = setting.text(config) else { return nil }
        if setting.key == Setting.endpoint.key, APNsEnvironment(rawValue: text) != nil {
            throw SettingsError("""
                \(setting.name): \(text) is no longer a setting; each token goes to the environment it was \
                registered with. Remove it, or give host:port for a server that plays both (the simulator)
                """)
        }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, let port = Int(parts[1]), (1...65535).contains(port) else {
            throw SettingsError("\(setting.name): \(text) is not host:port (e.g. localhost:2197)")
        }
        return APNsEndpoint(host: String(parts[0]), port: port, trust: trust)
    }

    /// A server given as `host:port` serves pushes and channel management alike.
    private static func hosts(_ endpoint: APNsEndpoint) -> Hosts {
        Hosts(push: endpoint, channelManagement: endpoint)
    }

    static func isAppleID(_ text: String) -> Bool {
        text.utf8.count == 10
            && text.utf8.allSatisfy { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}
