import Foundation
import Hummingbird
import HummingbirdTesting
import InMemoryLogging
import Logging
import Testing

@Suite("Logging")
struct LoggingTests {
    /// Tokens are credentials to push to a user's screen: at most a prefix reaches the log.
    @Test func tokensAndSecretsNeverReachTheLog() async throws {
        var handler = InMemoryLogHandler()
        handler.logLevel = .trace
        let logs = handler
        let logger = Logger(label: "test.api") { _ in logs }
        let jwt = try await APIHarness.token()
        try await APIHarness.run(logger: logger) { api in
            for (path, token) in [
                ("/v1/activities/r-1/tokens/phone", APIHarness.deviceToken),
                ("/v1/push-to-start-tokens/RideAttributes", String(repeating: "9f", count: 40)),
            ] {
                try await api.client.execute(
                    uri: path, method: .put, headers: APIHarness.jsonHeaders(jwt),
                    body: ByteBuffer(string: #"{"token":"\#(token)"}"#)
                ) { #expect($0.status.code < 300) }
            }
        }
        let lines = handler.entries.map { "\($0.message) \($0.metadata)" }
        #expect(lines.contains { $0.contains("hb.request.id") })
        #expect(lines.contains { $0.contains(String(APIHarness.deviceToken.prefix(8))) })
        for secret in [APIHarness.deviceToken, String(repeating: "9f", count: 40), jwt, APIHarness.secret] {
            #expect(!lines.contains { $0.contains(secret) })
        }
    }
}
