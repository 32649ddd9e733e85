import Foundation
import LivelineAPI
import LivelineCodecs

/// The producers file (`liveline.api.producers-file`): who may send events over HTTPS.
///
/// ```json
/// {"producers": [{"name": "rides", "keySHA256": "<64 hex digits>", "domains": ["ride"],
///                 "webhook": {"url": "https://rides.internal/outcomes", "secretFile": "/run/secrets/rides-webhook"}}]}
/// ```
///
/// It holds each key's SHA-256, never the key: `liveline producer-key` makes a key and
/// prints its entry. `domains` lists the domains the producer may publish, or `["*"]`.
/// `webhook`, optional, is where the producer hears its domains' outcomes (``Webhook``); its
/// secret stays in a file of its own, read at start.
enum ProducerSettings {
    private struct File: Decodable {
        let producers: [Entry]
    }

    private struct Entry: Decodable {
        let name: String
        let keySHA256: String
        let domains: [String]
        let webhook: WebhookEntry?
    }

    private struct WebhookEntry: Decodable {
        let url: String
        let secretFile: String
    }

    static func read(_ text: String, path: String) throws -> (producers: [ProducerCredential], webhooks: [Webhook]) {
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: Data(text.utf8))
        } catch {
            throw SettingsError(
                "liveline.api.producers-file \(path) is not {\"producers\": [{\"name\", \"keySHA256\", \"domains\", optional \"webhook\": {\"url\", \"secretFile\"}}]}")
        }
        var names: Set<String> = []
        var digests: Set<String> = []
        var webhooks: [Webhook] = []
        let producers = try file.producers.map { entry in
            // Through the initializer, which the decoder bypasses: it lower-cases the digest,
            // as the api compares digests.
            let producer = ProducerCredential(name: entry.name, keySHA256: entry.keySHA256, domains: entry.domains)
            let name = producer.name
            guard ProducerCredential.isValidName(name) else {
                throw SettingsError("liveline.api.producers-file: producer name \"\(name.prefix(64))\" must be 1 to 64 letters, digits, - _ or .")
            }
            guard producer.keySHA256.utf8.count == 64, Hex.isHex(producer.keySHA256) else {
                throw SettingsError("liveline.api.producers-file: producer \(name)'s keySHA256 must be 64 hex digits (a SHA-256)")
            }
            guard !producer.domains.isEmpty else {
                throw SettingsError("liveline.api.producers-file: producer \(name) names no domains; list them, or \"*\" for all")
            }
            guard names.insert(name).inserted else {
                throw SettingsError("liveline.api.producers-file: producer \(name) is listed twice")
            }
            guard digests.insert(producer.keySHA256).inserted else {
                throw SettingsError("liveline.api.producers-file: producer \(name) has the key of another producer")
            }
            if let webhook = entry.webhook {
                webhooks.append(try Self.webhook(webhook, of: producer))
            }
            return producer
        }
        return (producers, webhooks)
    }

    private static func webhook(_ entry: WebhookEntry, of producer: ProducerCredential) throws -> Webhook {
        guard let url = URL(string: entry.url), let scheme = url.scheme?.lowercased(), ["https", "http"].contains(scheme),
            let host = url.host, !host.isEmpty
        else {
            throw SettingsError("liveline.api.producers-file: producer \(producer.name)'s webhook url must be an https:// (or http://) URL")
        }
        let secret = try Setting.read(entry.secretFile, for: Setting.producersFile.name)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard secret.utf8.count >= 16 else {
            throw SettingsError(
                "liveline.api.producers-file: producer \(producer.name)'s webhook secret (\(entry.secretFile)) must be at least 16 bytes")
        }
        return Webhook(producer: producer, url: url, secret: Array(secret.utf8))
    }

    /// Refuses a producer that names a domain the deployment does not have: a typo would
    /// otherwise show up only as a `403` on the producer's first event.
    static func check(_ producers: [ProducerCredential], domains: Set<String>) throws {
        for producer in producers {
            for domain in producer.domains where domain != "*" && !domains.contains(domain) {
                throw SettingsError(
                    "liveline.api.producers-file: producer \(producer.name) names domain \(domain), which is not configured "
                        + "(domains: \(domains.sorted().joined(separator: ", ")))")
            }
        }
    }
}
