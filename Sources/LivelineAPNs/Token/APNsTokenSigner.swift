import Crypto
import Foundation
import LivelineCodecs
import NIOConcurrencyHelpers

// Tests: Tests/LivelineAPNsTests/ProviderTokenTests.swift

/// Mints and caches the ES256 provider token for one signing key, shared by every connection of a client.
///
/// This is a lock-protected class rather than an actor on purpose: every push asks for the token,
/// the answer is almost always "the cached one", and a lock is an order of magnitude cheaper than an
/// actor hop on that hot path. Signing (≈ tens of µs, once per 50 minutes) happens under the lock so
/// concurrent callers can never mint twice. Time comes from an injectable ``WallClock``.
public final class APNsTokenSigner: Sendable {
    private let teamID: String
    /// The key id (`kid`); not secret.
    public let keyID: String
    /// The key's raw scalar; swift-crypto 3's key type is not `Sendable`, so the key object is
    /// rebuilt on each (rare) signing.
    private let rawKey: Data
    private let clock: any WallClock
    private let state: NIOLockedValueBox<(cadence: ProviderTokenCadence, mints: Int)>

    /// - Parameters:
    ///   - teamID: `iss`.
    ///   - keyID: `kid`.
    ///   - privateKeyPEM: the .p8 file's text (PKCS#8 PEM).
    ///   - clock: wall clock for `iat` and the cadence.
    public init(teamID: String, keyID: String, privateKeyPEM: String, clock: any WallClock = SystemWallClock()) throws {
        self.teamID = teamID
        self.keyID = keyID
        self.rawKey = try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM).rawRepresentation
        self.clock = clock
        self.state = NIOLockedValueBox((ProviderTokenCadence(), 0))
    }

    /// The token to put in `authorization: bearer …` now, minting one if the cadence says so.
    public func currentToken() -> APNsProviderToken {
        let now = clock.now
        return state.withLockedValue { state in
            switch state.cadence.decide(now: now) {
            case .use(let token):
                return token
            case .mint:
                let key = try! P256.Signing.PrivateKey(rawRepresentation: rawKey)
                let token = Self.sign(teamID: teamID, keyID: keyID, key: key, now: now)
                state.cadence.minted(token)
                state.mints += 1
                return token
            }
        }
    }

    /// Reports that APNs rejected the token issued at `issuedAt` with ExpiredProviderToken.
    ///
    /// Only the first report for the current token counts, so N concurrent failures cause one refresh.
    /// Returns whether this call marked the token stale.
    @discardableResult
    public func invalidate(ifIssuedAt issuedAt: Date) -> Bool {
        state.withLockedValue { $0.cadence.invalidate(ifIssuedAt: issuedAt) }
    }

    /// How many tokens this signer has minted (for tests and metrics).
    public var mintCount: Int { state.withLockedValue { $0.mints } }

    static func sign(teamID: String, keyID: String, key: P256.Signing.PrivateKey, now: Date) -> APNsProviderToken {
        let issuedAt = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
        let header = #"{"alg":"ES256","kid":"\#(jsonEscaped(keyID))"}"#
        let claims = #"{"iss":"\#(jsonEscaped(teamID))","iat":\#(Int(issuedAt.timeIntervalSince1970))}"#
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        // ES256 JWTs carry the raw r||s form (64 bytes), not DER.
        let signature = try! key.signature(for: Array(signingInput.utf8))
        let jwt = signingInput + "." + Base64URL.encode(Array(signature.rawRepresentation))
        return APNsProviderToken(jwt: jwt, issuedAt: issuedAt)
    }

    private static func jsonEscaped(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }
}
