import Foundation

// Tests: Tests/LivelineAPITests/AuthenticationTests.swift

/// How the api verifies the bearer JWTs apps send.
///
/// The app's own backend issues them; `sub` is the user id the store knows.
public struct AuthenticationConfiguration: Sendable {
    /// The key that signs the tokens. Only the matching algorithm is accepted, never `none`.
    public enum VerificationKey: Sendable {
        /// An ES256 public key in PEM form.
        case es256PublicKey(pem: String)
        /// An HS256 shared secret. Read it from a file or the environment, never log it.
        case hs256Secret(String)
    }

    public var key: VerificationKey
    /// The required `iss` claim.
    public var issuer: String
    /// The `aud` claim must include this value.
    public var audience: String
    /// Allowed clock skew for `exp` and `nbf`, in seconds.
    public var leeway: TimeInterval
    /// The apps tokens may be for (their `app` claim).
    public var apps: APIApps

    public init(key: VerificationKey, issuer: String, audience: String, leeway: TimeInterval = 30, apps: APIApps = .standard) {
        self.key = key
        self.issuer = issuer
        self.audience = audience
        self.leeway = leeway
        self.apps = apps
    }
}
