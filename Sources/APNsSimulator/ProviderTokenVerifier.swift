import Crypto
import Foundation
import LivelineCodecs

// Tests: Tests/LivelineAPNsTests/ProviderTokenTests.swift

/// Checks `authorization: bearer <jwt>` the way APNs does: shape, ES256 header with `kid`, `iss` and
/// `iat` claims, age, and (for trusted keys) the signature.
///
/// Verification results are cached per token string by the caller: APNs sees the same token on
/// thousands of requests, and an ECDSA verify per request would make the simulator the bottleneck.
struct ProviderTokenVerifier: Sendable {
    struct Claims: Sendable, Hashable {
        var keyID: String
        var teamID: String
        var issuedAt: Double
    }

    enum Verdict: Sendable, Hashable {
        case valid(Claims)
        case invalid(reason: String)
    }

    /// Raw public keys: swift-crypto 3's key type is not `Sendable`; verification is rare (cached per token).
    private let keys: [String: (teamID: String, key: Data)]

    init(trustedKeys: [APNsSimulatorConfiguration.TrustedKey]) throws {
        var keys: [String: (teamID: String, key: Data)] = [:]
        for trusted in trustedKeys {
            keys[trusted.keyID] = (teamID: trusted.teamID, key: try P256.Signing.PublicKey(pemRepresentation: trusted.publicKeyPEM).rawRepresentation)
        }
        self.keys = keys
    }

    func verify(jwt: String) -> Verdict {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerBytes = Base64URL.decode(parts[0]),
            let claimBytes = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerBytes) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: claimBytes) as? [String: Any]
        else { return .invalid(reason: "InvalidProviderToken") }
        guard header["alg"] as? String == "ES256", let keyID = header["kid"] as? String, !keyID.isEmpty else {
            return .invalid(reason: "InvalidProviderToken")
        }
        guard let teamID = claims["iss"] as? String, !teamID.isEmpty,
            let issuedAt = (claims["iat"] as? NSNumber)?.doubleValue
        else { return .invalid(reason: "InvalidProviderToken") }
        if !keys.isEmpty {
            guard let trusted = keys[keyID] else { return .invalid(reason: "InvalidProviderToken") }
            guard trusted.teamID == teamID else { return .invalid(reason: "InvalidProviderToken") }
            guard let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
                let publicKey = try? P256.Signing.PublicKey(rawRepresentation: trusted.key),
                publicKey.isValidSignature(ecdsa, for: Array((parts[0] + "." + parts[1]).utf8))
            else { return .invalid(reason: "InvalidProviderToken") }
        }
        return .valid(Claims(keyID: keyID, teamID: teamID, issuedAt: issuedAt))
    }
}
