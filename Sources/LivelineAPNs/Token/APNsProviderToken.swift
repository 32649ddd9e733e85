import Foundation

// Tests: Tests/LivelineAPNsTests/ProviderTokenTests.swift, Tests/LivelineAPNsTests/ModelTests.swift

/// A signed ES256 provider token (JWT) and when it was issued.
///
/// `description` is redacted: the token is a bearer credential for the whole team and must never be
/// logged.
public struct APNsProviderToken: Sendable, Hashable, CustomStringConvertible {
    /// The compact JWT (`header.claims.signature`).
    public let jwt: String
    /// The `iat` claim.
    public let issuedAt: Date
    /// The `authorization` header value, built once per token rather than once per push.
    public let authorization: String

    public init(jwt: String, issuedAt: Date) {
        self.jwt = jwt
        self.issuedAt = issuedAt
        self.authorization = "bearer " + jwt
    }

    public var description: String { "APNsProviderToken(issuedAt: \(issuedAt), jwt: <redacted>)" }
}
