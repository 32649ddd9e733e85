import Foundation

/// A signed ES256 provider token (JWT) and when it was issued.
///
/// `description` is redacted: the token is a bearer credential for the whole team and must never be
/// logged.
public struct APNsProviderToken: Sendable, Hashable, CustomStringConvertible {
    /// The compact JWT (`header.claims.signature`).
    public let jwt: String
    /// The `iat` claim.
    public let issuedAt: Date

    public var description: String { "APNsProviderToken(issuedAt: \(issuedAt), jwt: <redacted>)" }
}
