import Foundation
import JWTKit

// Tests: Tests/LivelineAPITests/AuthenticationTests.swift

/// The claims the api requires of an app's bearer token.
struct UserClaims: JWTPayload {
    var sub: SubjectClaim
    var exp: ExpirationClaim
    var nbf: NotBeforeClaim?
    var iss: IssuerClaim
    var aud: AudienceClaim
    /// The bundle id of the app the token is for; absent, the deployment's default app.
    var app: String?

    /// Only the signature-independent checks that need no configuration; issuer, audience and
    /// the leeway are checked by ``BearerAuthenticator``.
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
