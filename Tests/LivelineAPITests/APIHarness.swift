import Foundation
import Hummingbird
import HummingbirdTesting
import JWTKit
import LivelineAPI
import LivelineModels
import LivelineStore
import Logging
import Testing

/// A live api on port 0 over a fresh SQLite store, plus tokens to call it with.
struct APIHarness: Sendable {
    static let secret = "test-secret-that-is-long-enough-for-hs256"
    static let issuer = "https://auth.example.com"
    static let audience = "liveline"

    let store: SQLiteLivelineStore
    let client: any TestClientProtocol

    struct Claims: JWTPayload {
        var sub: SubjectClaim
        var exp: ExpirationClaim
        var nbf: NotBeforeClaim?
        var iss: IssuerClaim
        var aud: AudienceClaim
        var app: String?
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    static func configuration(
        key: AuthenticationConfiguration.VerificationKey = .hs256Secret(secret),
        tokenEnvironments: Set<APNsEnvironment> = [.production, .sandbox], limits: APILimits = APILimits(),
        apps: APIApps = .standard
    ) -> APIConfiguration {
        APIConfiguration(
            host: "127.0.0.1", port: 0,
            authentication: AuthenticationConfiguration(key: key, issuer: issuer, audience: audience, leeway: 5, apps: apps),
            tokenEnvironments: tokenEnvironments, limits: limits)
    }

    static func run<T: Sendable>(
        key: AuthenticationConfiguration.VerificationKey = .hs256Secret(secret),
        tokenEnvironments: Set<APNsEnvironment> = [.production, .sandbox],
        erasure: Bool = false,
        limits: APILimits = APILimits(),
        apps: APIApps = .standard,
        logger: Logger? = nil,
        _ body: @Sendable (APIHarness) async throws -> T
    ) async throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("liveline-api-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteLivelineStore(configuration: .init(path: directory.appendingPathComponent("api.sqlite").path))
        var quiet = Logger(label: "test.api")
        quiet.logLevel = .warning
        let logger = logger ?? quiet
        // The store's own erasure; the ends of live activities need a broker, and the
        // pipeline test covers them.
        let forget: ForgetUser? = erasure
            ? { @Sendable userID in (ended: 0, erased: try await store.forgetUser(userID, sharedDomains: ["score"])) } : nil
        let app = try await buildApplication(
            configuration: configuration(key: key, tokenEnvironments: tokenEnvironments, limits: limits, apps: apps), store: store,
            logger: logger,
            forgetUser: forget)
        return try await app.test(.live) { client in
            try await body(APIHarness(store: store, client: client))
        }
    }

    /// A valid HS256 token for `user`, with claims adjustable for the failure cases.
    static func token(
        user: String = "u-1", expiresIn: TimeInterval = 300, notBefore: Date? = nil,
        issuer: String = issuer, audience: String = audience, secret: String = secret, app: String? = nil
    ) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        return try await keys.sign(Claims(
            sub: .init(value: user), exp: .init(value: Date().addingTimeInterval(expiresIn)),
            nbf: notBefore.map { .init(value: $0) }, iss: .init(value: issuer), aud: .init(value: [audience]), app: app))
    }

    static func bearer(_ token: String) -> HTTPFields { [.authorization: "Bearer \(token)"] }

    static func jsonHeaders(_ token: String) -> HTTPFields {
        [.authorization: "Bearer \(token)", .contentType: "application/json"]
    }

    static let deviceToken = String(repeating: "ab", count: 32)

    /// The error code of a JSON error response.
    static func errorCode(_ response: TestResponse) -> String? {
        struct Envelope: Decodable {
            struct Detail: Decodable {
                var code: String
                var message: String
            }
            var error: Detail
        }
        return try? JSONDecoder().decode(Envelope.self, from: Data(buffer: response.body)).error.code
    }

    static func json(_ response: TestResponse) -> [String: Any] {
        let object = try? JSONSerialization.jsonObject(with: Data(buffer: response.body))
        return object as? [String: Any] ?? [:]
    }
}

extension Data {
    init(buffer: ByteBuffer) {
        self.init(buffer.readableBytesView)
    }
}

extension ByteBuffer {
    init(json: String) {
        self.init(string: json)
    }
}
