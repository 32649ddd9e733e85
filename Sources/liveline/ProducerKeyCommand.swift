import ArgumentParser
import Foundation
import LivelineAPI

// Tests: scripts/check-docs

/// `liveline producer-key`: a new key for a producer that sends events over HTTPS, and the
/// entry the api's producers file keeps for it (the key's SHA-256, never the key).
struct ProducerKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "producer-key",
        abstract: "Make a key for a producer that sends events over HTTPS (POST /v1/events).",
        discussion: """
            Prints the key once: give it to the producer, which sends it as Authorization: Bearer <key>. \
            Add the printed entry to the file liveline.api.producers-file names; it holds the key's SHA-256 only.
            """)
    @Argument(help: "The producer's name, e.g. rides: it names the producer in logs and metrics.") var name: String
    @Option(name: .customLong("domain"), help: "A domain it may publish; repeat for several, or * for all.") var domains: [String] = []
    @Flag(help: "JSON for tools: {\"name\", \"key\", \"entry\"}.") var json = false

    func validate() throws {
        guard !domains.isEmpty else { throw ValidationError("name at least one --domain (or --domain '*' for all)") }
        guard ProducerCredential.isValidName(name) else {
            throw ValidationError("the name must be 1 to 64 letters, digits, - _ or .")
        }
    }

    func run() throws {
        let key = ProducerCredential.newKey()
        let entry = ProducerCredential(name: name, keySHA256: ProducerCredential.digest(ofKey: key), domains: domains)
        struct Output: Encodable {
            let name: String
            let key: String
            let entry: ProducerCredential
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        if json {
            print(String(decoding: try encoder.encode(Output(name: name, key: key, entry: entry)), as: UTF8.self))
            return
        }
        let entryJSON = String(decoding: try encoder.encode(entry), as: UTF8.self)
        print("key for \(name) (shown once; give it to the producer):")
        print("  \(key)")
        print("entry for the producers file (liveline.api.producers-file):")
        print("  \(entryJSON)")
    }
}
