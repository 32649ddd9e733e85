import Foundation
import LivelineAPI
import LivelineRuntime
import Testing

@Suite struct SettingsTests {
    @Test func defaultsAreTheEmbeddedSingleMachineSetup() async throws {
        let settings = try await LivelineSettings.load(file: nil, environment: [:])
        #expect(settings.amqp.host == "127.0.0.1")
        #expect(settings.amqp.port == 5672)
        guard case .sqlite(let path) = settings.store else {
            Issue.record("the default store is SQLite")
            return
        }
        #expect(path == ".liveline/liveline.sqlite")
        #expect(settings.api.port == 8080)
        #expect(settings.api.jwtKey == nil)
    }

    @Test func environmentVariablesAndSecretFiles() async throws {
        let secretFile = FileManager.default.temporaryDirectory.appendingPathComponent("jwt-\(UUID().uuidString)")
        try "a-shared-secret-of-at-least-32-bytes!!\n".write(to: secretFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: secretFile) }
        let settings = try await LivelineSettings.load(
            file: nil,
            environment: [
                "LIVELINE_AMQP_URL": "amqps://svc:pw@rabbit.internal/liveline",
                "LIVELINE_STORE_URL": "postgres://liveline:pw@db:5432/liveline",
                "LIVELINE_API_PORT": "9090",
                "LIVELINE_API_JWT_HS256_SECRET_FILE": secretFile.path,
            ])
        #expect(settings.amqp.host == "rabbit.internal")
        #expect(settings.amqp.tls != nil)
        #expect(settings.api.port == 9090)
        guard case .hs256(let secret) = settings.api.jwtKey else {
            Issue.record("the secret file was not read")
            return
        }
        #expect(secret == "a-shared-secret-of-at-least-32-bytes!!")
        #expect(!settings.store.description.contains("pw"))
    }

    @Test func aJSONFileIsOverriddenByTheEnvironment() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("liveline-\(UUID().uuidString).json")
        try #"{"liveline": {"api": {"port": 7000, "host": "0.0.0.0"}}}"#.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let settings = try await LivelineSettings.load(file: file.path, environment: ["LIVELINE_API_PORT": "7001"])
        #expect(settings.api.port == 7001)
        #expect(settings.api.host == "0.0.0.0")
    }

    @Test func badValuesAreRefusedWithTheKeyNamed() async throws {
        await #expect(throws: SettingsError.self) {
            _ = try await LivelineSettings.load(file: nil, environment: ["LIVELINE_STORE_URL": "mysql://x"])
        }
        for port in ["70000", "-1"] {
            await #expect {
                _ = try await LivelineSettings.load(file: nil, environment: ["LIVELINE_API_PORT": port])
            } throws: { error in
                "\(error)".contains("liveline.api.port must be a port number")
            }
        }
        // A value that is no number at all is refused too, not replaced by the default.
        for (key, variable) in [("api.port", "LIVELINE_API_PORT"), ("ops.port", "LIVELINE_OPS_PORT"),
                                ("ops.stall-after-seconds", "LIVELINE_OPS_STALL_AFTER_SECONDS")] {
            await #expect {
                _ = try await LivelineSettings.load(file: nil, environment: [variable: "eighty"])
            } throws: { error in
                "\(error)".contains("liveline.\(key) must be a whole number, not \"eighty\"")
            }
        }
        for (key, variable) in [("api.limits.devices-per-user", "LIVELINE_API_LIMITS_DEVICES_PER_USER"),
                                ("api.limits.user-requests-per-minute", "LIVELINE_API_LIMITS_USER_REQUESTS_PER_MINUTE")] {
            await #expect {
                _ = try await LivelineSettings.load(file: nil, environment: [variable: "0"])
            } throws: { error in
                "\(error)".contains("liveline.\(key) must be 1 to")
            }
        }
        let limits = try await LivelineSettings.load(file: nil, environment: [
            "LIVELINE_API_LIMITS_FOLLOWS_PER_USER": "7", "LIVELINE_API_LIMITS_APP_REQUESTS_PER_SECOND": "50",
        ]).api.limits
        #expect(limits == APILimits(userRequestsPerMinute: 120, appRequestsPerSecond: 50, devicesPerUser: 20, followsPerUser: 7))
        for cache in ["0", "1025"] {
            await #expect {
                _ = try await LivelineSettings.load(file: nil, environment: ["LIVELINE_STORE_SQLITE_CACHE_MIB": cache])
            } throws: { error in
                "\(error)".contains("liveline.store.sqlite-cache-mib must be 1 to 1024")
            }
        }
        #expect(try await LivelineSettings.load(file: nil, environment: ["LIVELINE_STORE_SQLITE_CACHE_MIB": "8"]).sqliteCacheMiB == 8)
        #expect(try await LivelineSettings.load(file: nil, environment: [:]).sqliteCacheMiB == 2, "SQLite's own default, for every role")
        await #expect {
            _ = try await LivelineSettings.load(file: nil, environment: ["LIVELINE_API_TOPIC_KINDS": "team,premier league"])
        } throws: { error in
            "\(error)".contains("liveline.api.topic-kinds")
        }
        #expect(try await LivelineSettings.load(file: nil, environment: [:]).api.tokenEnvironments == [.production, .sandbox])
        #expect(try await LivelineSettings.load(file: nil, environment: ["LIVELINE_API_TOKEN_ENVIRONMENTS": "production"])
            .api.tokenEnvironments == [.production])
        await #expect {
            _ = try await LivelineSettings.load(file: nil, environment: ["LIVELINE_API_TOKEN_ENVIRONMENTS": "production,staging"])
        } throws: { error in
            "\(error)".contains("liveline.api.token-environments") && "\(error)".contains("staging")
        }
        await #expect {
            _ = try await LivelineSettings.load(file: nil, environment: ["LIVELINE_API_JWT_HS256_SECRET": "short"])
        } throws: { error in
            "\(error)".contains("hs256-secret") && !"\(error)".contains("short")
        }
    }
}
