import Crypto
import Foundation
import LivelineRuntime
import Testing

/// `liveline.apps` and the APNs endpoints: what a good configuration builds, and the
/// message each mistake gets (the key named, the secret never).
@Suite struct APNsSettingsTests {
    /// A temporary directory with .p8 keys in it.
    final class Keys: Sendable {
        let directory: URL
        let pemA = P256.Signing.PrivateKey().pemRepresentation
        let pemB = P256.Signing.PrivateKey().pemRepresentation

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("apns-keys-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try pemA.write(to: directory.appendingPathComponent("A.p8"), atomically: true, encoding: .utf8)
            try pemB.write(to: directory.appendingPathComponent("B.p8"), atomically: true, encoding: .utf8)
            try "not a key".write(to: directory.appendingPathComponent("junk.p8"), atomically: true, encoding: .utf8)
        }

        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

        deinit { try? FileManager.default.removeItem(at: directory) }
    }

    /// Two apps: rides (key A, production) and scores (key B, sandbox).
    static func twoApps(_ keys: Keys) -> [String: String] {
        [
            "LIVELINE_APPS": "rides,scores",
            "LIVELINE_APP_RIDES_BUNDLE_ID": "com.example.rides",
            "LIVELINE_APP_RIDES_TEAM_ID": "TEAM000001",
            "LIVELINE_APP_RIDES_KEY_ID": "KEYAAAAAAA",
            "LIVELINE_APP_RIDES_KEY_FILE": keys.path("A.p8"),
            "LIVELINE_APP_SCORES_BUNDLE_ID": "com.example.scores",
            "LIVELINE_APP_SCORES_TEAM_ID": "TEAM000001",
            "LIVELINE_APP_SCORES_KEY_ID": "KEYBBBBBBB",
            "LIVELINE_APP_SCORES_KEY_FILE": keys.path("B.p8"),
            "LIVELINE_APP_SCORES_ENVIRONMENT": "sandbox",
        ]
    }

    static func settings(_ environment: [String: String]) async throws -> APNsSettings {
        try APNsSettings(config: try await LivelineSettings.reader(file: nil, environment: environment))
    }

    /// The settings error for `environment`, which must name `key` and hold no key material.
    static func refusal(_ environment: [String: String], names key: String, _ keys: Keys) async -> String {
        do {
            _ = try await settings(environment).clients(logger: .init(label: "test"))
            Issue.record("accepted a configuration with a mistake in \(key)")
            return ""
        } catch {
            let message = "\(error)"
            #expect(error is SettingsError, "\(message)")
            #expect(message.contains(key), "\(message) does not name \(key)")
            #expect(!message.contains("PRIVATE KEY") && !message.contains(keys.pemA.prefix(60).suffix(30)))
            return message
        }
    }

    @Test func appsAreReadWithTheirKeysAndEnvironments() async throws {
        let keys = try Keys()
        let settings = try await Self.settings(Self.twoApps(keys))
        #expect(settings.apps.map(\.bundleID) == ["com.example.rides", "com.example.scores"])
        #expect(settings.apps.map(\.channelEnvironment) == [.production, .sandbox])
        #expect(settings.apps.map(\.keyID) == ["KEYAAAAAAA", "KEYBBBBBBB"])
        // Apple's hosts unless told otherwise.
        #expect(settings.production.push.host == "api.push.apple.com")
        #expect(settings.sandbox.push.host == "api.sandbox.push.apple.com")
        #expect(settings.sandbox.channelManagement.port == 2195)
        let directory = try settings.clients(logger: .init(label: "test"))
        #expect(directory.namedClients.map(\.name) == [
            "apns com.example.rides production", "apns com.example.rides sandbox",
            "apns com.example.scores production", "apns com.example.scores sandbox",
        ])
        await directory.shutdown()
    }

    @Test func appsThatShareAKeyShareOneProviderToken() async throws {
        let keys = try Keys()
        var environment = Self.twoApps(keys)
        environment["LIVELINE_APP_SCORES_KEY_ID"] = "KEYAAAAAAA"
        environment["LIVELINE_APP_SCORES_KEY_FILE"] = keys.path("A.p8")
        let directory = try await Self.settings(environment).clients(logger: .init(label: "test"))
        let clients = directory.namedClients.map(\.client)
        #expect(clients.count == 4)
        #expect(clients.allSatisfy { $0.tokenSigner === clients[0].tokenSigner }, "one signer for the key")
        _ = clients.map { $0.tokenSigner.currentToken() }
        #expect(clients[0].tokenSigner.mintCount == 1, "one provider token minted for four clients")
        await directory.shutdown()
    }

    @Test func oneServerCanPlayBothEnvironmentsAndEachCanBeSetApart() async throws {
        let keys = try Keys()
        var environment = Self.twoApps(keys)
        environment["LIVELINE_APNS_ENDPOINT"] = "localhost:2197"
        var settings = try await Self.settings(environment)
        #expect(settings.production.push.port == 2197 && settings.sandbox.push.port == 2197)
        #expect(settings.sandbox.channelManagement.port == 2197)
        environment["LIVELINE_APNS_SANDBOX_ENDPOINT"] = "127.0.0.1:3000"
        settings = try await Self.settings(environment)
        #expect(settings.production.push.port == 2197 && settings.sandbox.push.port == 3000)
    }

    @Test func noAppsIsRefused() async throws {
        let keys = try Keys()
        let message = await Self.refusal([:], names: "liveline.apps", keys)
        #expect(message.contains("LIVELINE_APP_RIDES_BUNDLE_ID"), "says how to fix it: \(message)")
    }

    @Test func aMissingKeyFileIsRefused() async throws {
        let keys = try Keys()
        var environment = Self.twoApps(keys)
        environment["LIVELINE_APP_SCORES_KEY_FILE"] = keys.path("missing.p8")
        let message = await Self.refusal(environment, names: "liveline.app.scores.key-file", keys)
        #expect(message.contains("missing.p8"))
        environment["LIVELINE_APP_SCORES_KEY_FILE"] = nil
        _ = await Self.refusal(environment, names: "liveline.app.scores.key-file", keys)
    }

    @Test func aFileThatIsNotAKeyIsRefused() async throws {
        let keys = try Keys()
        var environment = Self.twoApps(keys)
        environment["LIVELINE_APP_RIDES_KEY_FILE"] = keys.path("junk.p8")
        let message = await Self.refusal(environment, names: "liveline.app.rides.key-file", keys)
        #expect(!message.contains("not a key"), "the file's content is not echoed: \(message)")
    }

    @Test(arguments: ["com example.rides", "rides", "com..rides", "com.example.rides!", ".com.example"])
    func aMalformedBundleIDIsRefused(bundleID: String) async throws {
        let keys = try Keys()
        var environment = Self.twoApps(keys)
        environment["LIVELINE_APP_RIDES_BUNDLE_ID"] = bundleID
        let message = await Self.refusal(environment, names: "liveline.app.rides.bundle-id", keys)
        #expect(message.contains("e.g. com.example.rides"))
    }

    @Test func anUnknownEnvironmentIsRefused() async throws {
        let keys = try Keys()
        var environment = Self.twoApps(keys)
        environment["LIVELINE_APP_SCORES_ENVIRONMENT"] = "staging"
        let message = await Self.refusal(environment, names: "liveline.app.scores.environment", keys)
        #expect(message.contains("production or sandbox"))
    }

    @Test func twoAppsWithTheSameBundleIDAreRefused() async throws {
        let keys = try Keys()
        var environment = Self.twoApps(keys)
        environment["LIVELINE_APP_SCORES_BUNDLE_ID"] = "com.example.rides"
        let message = await Self.refusal(environment, names: "liveline.app.scores.bundle-id", keys)
        #expect(message.contains("rides"))
    }

    @Test func aSharedKeyIDWithAnotherKeyIsRefused() async throws {
        let keys = try Keys()
        var environment = Self.twoApps(keys)
        environment["LIVELINE_APP_SCORES_KEY_ID"] = "KEYAAAAAAA"
        _ = await Self.refusal(environment, names: "liveline.app.scores.key-id", keys)
    }

    @Test func malformedTeamAndKeyIDsAndEndpointsAreRefused() async throws {
        let keys = try Keys()
        for (variable, value, key) in [
            ("LIVELINE_APP_RIDES_TEAM_ID", "team1", "liveline.app.rides.team-id"),
            ("LIVELINE_APP_RIDES_KEY_ID", "", "liveline.app.rides.key-id"),
            ("LIVELINE_APPS", "rides,Scores!", "liveline.apps"),
            ("LIVELINE_APNS_ENDPOINT", "sandbox", "liveline.apns.endpoint"),
            ("LIVELINE_APNS_PRODUCTION_ENDPOINT", "localhost", "liveline.apns.production-endpoint"),
            ("LIVELINE_APNS_CA_FILE", keys.path("no-ca.pem"), "liveline.apns.ca-file"),
        ] {
            var environment = Self.twoApps(keys)
            environment[variable] = value
            _ = await Self.refusal(environment, names: key, keys)
        }
    }
}
