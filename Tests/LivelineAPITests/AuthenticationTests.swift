import Foundation
import Hummingbird
import HummingbirdTesting
import JWTKit
import LivelineAPI
import Testing

@Suite("Authentication")
struct AuthenticationTests {
    static let path = "/v1/preferences"

    func expectUnauthorized(_ headers: HTTPFields, _ client: any TestClientProtocol) async throws {
        try await client.execute(uri: Self.path, method: .get, headers: headers) { response in
            #expect(response.status == .unauthorized)
            #expect(APIHarness.errorCode(response) == "unauthorized")
            #expect(response.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true)
        }
    }

    @Test func aMissingOrMalformedHeaderIsRefused() async throws {
        try await APIHarness.run { api in
            try await expectUnauthorized([:], api.client)
            try await expectUnauthorized([.authorization: "Basic dTpw"], api.client)
            try await expectUnauthorized([.authorization: "Bearer not.a.jwt"], api.client)
            try await expectUnauthorized([.authorization: "Bearer "], api.client)
        }
    }

    @Test func aValidTokenIsAccepted() async throws {
        try await APIHarness.run { api in
            let token = try await APIHarness.token()
            try await api.client.execute(uri: Self.path, method: .get, headers: APIHarness.bearer(token)) { response in
                #expect(response.status == .ok)
            }
        }
    }

    @Test func expiredNotYetValidAndMisaddressedTokensAreRefused() async throws {
        try await APIHarness.run { api in
            for token in [
                try await APIHarness.token(expiresIn: -60),
                try await APIHarness.token(notBefore: Date().addingTimeInterval(600)),
                try await APIHarness.token(issuer: "https://evil.example.com"),
                try await APIHarness.token(audience: "someone-else"),
            ] {
                try await expectUnauthorized(APIHarness.bearer(token), api.client)
            }
        }
    }

    @Test func aForgedSignatureIsRefused() async throws {
        try await APIHarness.run { api in
            let forged = try await APIHarness.token(secret: "another-secret-another-secret-another")
            try await expectUnauthorized(APIHarness.bearer(forged), api.client)
            // A valid token whose payload was swapped for another user's.
            let valid = try await APIHarness.token(user: "u-1").split(separator: ".")
            let other = try await APIHarness.token(user: "u-2").split(separator: ".")
            try await expectUnauthorized(APIHarness.bearer("\(valid[0]).\(other[1]).\(valid[2])"), api.client)
        }
    }

    @Test func algNoneIsRefused() async throws {
        try await APIHarness.run { api in
            func base64URL(_ string: String) -> String {
                Data(string.utf8).base64EncodedString()
                    .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                    .replacingOccurrences(of: "=", with: "")
            }
            let exp = Int(Date().addingTimeInterval(300).timeIntervalSince1970)
            let payload = #"{"sub":"u-1","exp":\#(exp),"iss":"\#(APIHarness.issuer)","aud":"\#(APIHarness.audience)"}"#
            for header in [#"{"alg":"none","typ":"JWT"}"#, #"{"alg":"None"}"#] {
                let unsigned = "\(base64URL(header)).\(base64URL(payload))."
                try await expectUnauthorized(APIHarness.bearer(unsigned), api.client)
            }
        }
    }

    @Test func anHS256TokenIsRefusedWhenTheKeyIsES256() async throws {
        let key = ES256PrivateKey()
        try await APIHarness.run(key: .es256PublicKey(pem: key.publicKey.pemRepresentation)) { api in
            // The classic confusion attack: HMAC keyed with the public key's text.
            let confused = try await APIHarness.token(secret: key.publicKey.pemRepresentation)
            try await expectUnauthorized(APIHarness.bearer(confused), api.client)
            let keys = JWTKeyCollection()
            await keys.add(ecdsa: key)
            let valid = try await keys.sign(APIHarness.Claims(
                sub: .init(value: "u-1"), exp: .init(value: Date().addingTimeInterval(300)), nbf: nil,
                iss: .init(value: APIHarness.issuer), aud: .init(value: [APIHarness.audience])))
            try await api.client.execute(uri: Self.path, method: .get, headers: APIHarness.bearer(valid)) { response in
                #expect(response.status == .ok)
            }
        }
    }

    @Test func operationalRoutesNeedNoToken() async throws {
        try await APIHarness.run { api in
            try await api.client.execute(uri: "/healthz", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == #"{"status":"ok"}"#)
                #expect(response.headers[HTTPFields.Element.Name("x-request-id")!] != nil)
            }
            try await api.client.execute(uri: "/metrics", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body).contains("liveline_api_requests_total"))
                #expect(String(buffer: response.body).contains(#"route="/healthz""#))
            }
            try await api.client.execute(uri: "/nowhere", method: .get) { response in
                #expect(response.status == .notFound)
                #expect(APIHarness.errorCode(response) == "not-found")
            }
        }
    }
}
