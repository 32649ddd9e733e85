import Crypto
import Foundation
import LivelineCodecs
import SwiftASN1
import X509

// Tests: Tests/LivelineAPNsTests/NGHTTP2InteropTests.swift, Tests/LivelineAPNsTests/DevicePushTests.swift

/// A throwaway certificate authority + server certificate (one and the same) generated at start-up,
/// valid for `localhost` and `127.0.0.1`, so clients can trust exactly this simulator.
struct SelfSignedCertificate: Sendable {
    let certificatePEM: String
    let privateKeyPEM: String

    static func generate() throws -> SelfSignedCertificate {
        let key = P256.Signing.PrivateKey()
        // A name of its own: a CA file that trusts two simulators (one playing production,
        // one the sandbox) is looked up by subject, and two equal subjects would shadow
        // each other.
        let suffix = Hex.encode((0..<4).map { _ in UInt8.random(in: 0...255) })
        let name = try DistinguishedName {
            CommonName("Liveline APNs Simulator \(suffix)")
            OrganizationName("Liveline")
        }
        let now = Date()
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(365 * 24 * 3600),
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(digitalSignature: true, keyCertSign: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([
                    .dnsName("localhost"),
                    .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
                ])
            },
            issuerPrivateKey: .init(key)
        )
        return SelfSignedCertificate(
            certificatePEM: try certificate.serializeAsPEM().pemString,
            privateKeyPEM: key.pemRepresentation
        )
    }
}
