import Crypto
import Foundation
import LivelineAPI
import LivelineCodecs

// Tests: Tests/LivelineRuntimeTests/OutcomeWebhookTests.swift

/// Where a producer hears its events' outcomes over HTTPS: its entry's `webhook` in the
/// producers file, `{"url": "https://…", "secretFile": "/run/secrets/…"}`. The api posts
/// the outcomes of the producer's domains there, signed with the secret.
public struct Webhook: Sendable {
    /// The producer it belongs to: it hears only the outcomes of the domains it may publish.
    public var producer: ProducerCredential
    public var url: URL
    /// The HMAC key; never logged.
    let secret: SymmetricKey

    public init(producer: ProducerCredential, url: URL, secret: [UInt8]) {
        self.producer = producer
        self.url = url
        self.secret = SymmetricKey(data: secret)
    }

    /// The header a receiver checks, `Liveline-Signature: t=<unix seconds>,v1=<hex>`: the
    /// HMAC-SHA256 of `<t>.<body>` under the secret. The time in it lets a receiver refuse
    /// an old request played again.
    public static let signatureHeader = "Liveline-Signature"

    func signature(of body: [UInt8], at time: Date) -> String {
        let seconds = String(Int64(time.timeIntervalSince1970))
        var signed = Array(seconds.utf8)
        signed.append(UInt8(ascii: "."))
        signed += body
        let mac = HMAC<SHA256>.authenticationCode(for: signed, using: secret)
        return "t=\(seconds),v1=\(Hex.encode(Array(mac)))"
    }
}
