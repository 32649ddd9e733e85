import Foundation
import Hummingbird
import JWTKit
import LivelineCore

// Tests: Tests/LivelineAPITests/AuthenticationTests.swift

/// Verifies `Authorization: Bearer <jwt>`: signature with the configured key (the header's
/// `alg` must match it, so `none` never passes), then `exp`, `nbf`, `iss`, `aud`, `sub` and
/// the `app` claim, which names the app the token is for (a bundle id; absent, the default
/// app). A token for an app the deployment does not serve is refused with 403.
struct BearerAuthenticator: Sendable {
    let keys: JWTKeyCollection
    let configuration: AuthenticationConfiguration

    init(configuration: AuthenticationConfiguration) async throws {
        let keys = JWTKeyCollection()
        switch configuration.key {
        case .es256PublicKey(let pem):
            await keys.add(ecdsa: try ES256PublicKey(pem: pem))
        case .hs256Secret(let secret):
            await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        }
        self.keys = keys
        self.configuration = configuration
    }

    func authenticate(_ request: Request, now: Date = Date()) async throws -> AuthenticatedUser {
        let token = try Self.credential(of: request, missing: "a bearer token is required")
        let claims: UserClaims
        do {
            claims = try await keys.verify(token, as: UserClaims.self)
        } catch {
            throw APIError.unauthorized("the bearer token is not valid")
        }
        guard claims.exp.value.addingTimeInterval(configuration.leeway) > now else {
            throw APIError.unauthorized("the bearer token has expired")
        }
        if let nbf = claims.nbf, nbf.value.addingTimeInterval(-configuration.leeway) > now {
            throw APIError.unauthorized("the bearer token is not valid yet")
        }
        guard claims.iss.value == configuration.issuer else {
            throw APIError.unauthorized("the bearer token has the wrong issuer")
        }
        guard claims.aud.value.contains(configuration.audience) else {
            throw APIError.unauthorized("the bearer token has the wrong audience")
        }
        guard Validation.isIdentifier(claims.sub.value) else {
            throw APIError.unauthorized("the bearer token's subject is not a valid user id")
        }
        if let app = claims.app, !AppKeys.isBundleID(app) {
            throw APIError.unauthorized("the bearer token's app claim is not a bundle id")
        }
        let app = claims.app ?? configuration.apps.defaultApp
        guard configuration.apps.all.contains(app) else {
            throw APIError.forbidden("this deployment does not serve the app \(app)")
        }
        return AuthenticatedUser(id: claims.sub.value, app: app, keys: AppKeys(defaultApp: configuration.apps.defaultApp))
    }

    /// The credential of `Authorization: Bearer <credential>`, or 401: `missing` when there is no header.
    static func credential(of request: Request, missing: String) throws -> String {
        guard let header = request.headers[.authorization] else { throw APIError.unauthorized(missing) }
        let prefix = "bearer "
        guard header.count > prefix.count, header.prefix(prefix.count).lowercased() == prefix else {
            throw APIError.unauthorized("the authorization scheme must be Bearer")
        }
        return header.dropFirst(prefix.count).trimmingCharacters(in: .whitespaces)
    }
}
