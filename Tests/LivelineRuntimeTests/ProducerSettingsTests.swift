import Foundation
import LivelineAPI
import LivelineRuntime
import Prometheus
import Testing

/// `liveline.api.producers-file`: who may send events over HTTPS, checked at start.
@Suite struct ProducerSettingsTests {
    static func load(_ json: String, extra: [String: String] = [:]) async throws -> LivelineSettings {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("producers-\(UUID().uuidString).json")
        try json.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        return try await LivelineSettings.load(file: nil, environment: ["LIVELINE_API_PRODUCERS_FILE": file.path].merging(extra) { $1 })
    }

    static let digest = String(repeating: "ab", count: 32)

    @Test func producersAreReadWithTheirDomainsAndTheEventLimits() async throws {
        let settings = try await Self.load(
            #"{"producers": [{"name": "rides", "keySHA256": "\#(Self.digest.uppercased())", "domains": ["ride"]}]}"#,
            extra: ["LIVELINE_API_EVENTS_MAX_BATCH_EVENTS": "50", "LIVELINE_API_EVENTS_PUBLISH_TIMEOUT_MS": "1500"])
        #expect(settings.api.producers == [ProducerCredential(name: "rides", keySHA256: Self.digest, domains: ["ride"])])
        #expect(settings.api.producers.first?.keySHA256 == Self.digest, "kept in lower case, as digests are compared")
        #expect(settings.api.maximumBatchEvents == 50)
        #expect(settings.api.maximumEventBodyBytes == 1024 * 1024)
        #expect(settings.api.publishTimeout == .milliseconds(1500))
        #expect(try await LivelineSettings.load(file: nil, environment: [:]).api.producers.isEmpty, "none by default")
    }

    @Test(arguments: [
        (#"[1, 2]"#, "is not {\"producers\""),
        (#"{"producers": [{"name": "rides", "keySHA256": "abc", "domains": ["ride"]}]}"#, "64 hex digits"),
        (#"{"producers": [{"name": "rides", "keySHA256": "\#(digest)", "domains": []}]}"#, "names no domains"),
        (#"{"producers": [{"name": "ri des", "keySHA256": "\#(digest)", "domains": ["ride"]}]}"#, "must be 1 to 64 letters"),
        (#"{"producers": [{"name": "a", "keySHA256": "\#(digest)", "domains": ["*"]}, {"name": "a", "keySHA256": "\#(String(repeating: "cd", count: 32))", "domains": ["*"]}]}"#, "listed twice"),
        (#"{"producers": [{"name": "a", "keySHA256": "\#(digest)", "domains": ["*"]}, {"name": "b", "keySHA256": "\#(digest)", "domains": ["*"]}]}"#, "the key of another producer"),
    ])
    func aWrongProducersFileIsRefusedSayingWhy(json: String, problem: String) async throws {
        let error = await #expect(throws: SettingsError.self) { _ = try await Self.load(json) }
        #expect(error?.description.contains(problem) == true, "\(error?.description ?? "")")
        #expect(error?.description.contains(Self.digest) != true, "no digest is echoed")
    }

    /// A producer's webhook: its URL, and its secret read from a file of its own; a URL that
    /// is not http(s) or a short secret is refused, and the secret is never echoed.
    @Test func aWebhookIsReadWithItsSecretFromItsFile() async throws {
        let secretFile = FileManager.default.temporaryDirectory.appendingPathComponent("webhook-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: secretFile) }
        func producers(url: String, secret: String) async throws -> LivelineSettings {
            try secret.write(to: secretFile, atomically: true, encoding: .utf8)
            return try await Self.load(#"""
                {"producers": [{"name": "rides", "keySHA256": "\#(Self.digest)", "domains": ["ride"],
                                "webhook": {"url": "\#(url)", "secretFile": "\#(secretFile.path)"}}]}
                """#, extra: ["LIVELINE_API_WEBHOOKS_GIVE_UP_SECONDS": "30"])
        }
        let settings = try await producers(url: "https://rides.internal/outcomes", secret: "a-secret-of-20-bytes\n")
        let webhook = try #require(settings.api.webhooks.first)
        #expect(webhook.producer.name == "rides" && webhook.producer.domains == ["ride"] && webhook.url.host == "rides.internal")
        #expect(settings.api.webhookGiveUp == .seconds(30))
        #expect(try await LivelineSettings.load(file: nil, environment: [:]).api.webhookGiveUp == .seconds(600))

        let scheme = await #expect(throws: SettingsError.self) { _ = try await producers(url: "ftp://rides/x", secret: "a-secret-of-20-bytes") }
        #expect(scheme?.description.contains("webhook url must be an https://") == true)
        let short = await #expect(throws: SettingsError.self) { _ = try await producers(url: "https://rides/x", secret: "short-secret") }
        #expect(short?.description.contains("must be at least 16 bytes") == true)
        #expect(short?.description.contains("short-secret") == false, "the secret is never echoed")
    }

    /// A domain the deployment does not have is a typo, refused when the api starts.
    @Test func aProducerOfAnUnknownDomainStopsTheAPIAtStart() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("producers-\(UUID().uuidString).json")
        try #"{"producers": [{"name": "pizza", "keySHA256": "\#(Self.digest)", "domains": ["piza"]}]}"#
            .write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let config = try await LivelineSettings.reader(file: nil, environment: [
            "LIVELINE_API_JWT_HS256_SECRET": "a-shared-secret-of-at-least-32-bytes!!", "LIVELINE_API_PRODUCERS_FILE": file.path,
        ])
        let error = await #expect(throws: SettingsError.self) {
            try await runRole(.api, config: config, registry: PrometheusCollectorRegistry(), logger: .init(label: "test"))
        }
        #expect(error?.description.contains("names domain piza, which is not configured") == true, "\(error?.description ?? "")")
    }

    /// `liveline producer-key`'s digest is what the api compares.
    @Test func aNewKeyIsRandomAndItsDigestIsSHA256() {
        let key = ProducerCredential.newKey()
        #expect(key.hasPrefix("llp_") && key.count == 47)
        #expect(key != ProducerCredential.newKey())
        #expect(ProducerCredential.digest(ofKey: "abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
