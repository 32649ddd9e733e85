import Configuration
import Foundation
import LivelineAMQP
import LivelineAPI
import LivelineModels

/// Every setting a Liveline process reads, with its key and default.
///
/// Keys are read under `liveline.`; as environment variables they are upper-cased with `_`
/// for `.` and `-`, so `liveline.amqp.url` is `LIVELINE_AMQP_URL`. Environment wins over the
/// JSON file given with `--config`, which wins over the defaults here. Secrets (URLs with
/// passwords, the JWT secret) are read with `isSecret`, so configuration access logs redact
/// them, and each can come from a file instead (`…-file` keys).
public struct LivelineSettings: Sendable {
    /// `liveline.amqp.url` (secret): the broker, `amqp://` or `amqps://`.
    /// Default `amqp://guest:guest@127.0.0.1:5672/%2f`.
    public var amqp: AMQPConfiguration
    /// `liveline.store.url` (secret): `sqlite:<path>` (the embedded default,
    /// `sqlite:.liveline/liveline.sqlite`) or `postgres://user:password@host:5432/db`.
    public var store: StoreLocation
    /// `liveline.store.sqlite-cache-mib`: each SQLite connection's page cache, in MiB (1 to
    /// 1024); 2, SQLite's own default, unless set. A cache fills and stays full, so it is part
    /// of a worker's steady memory: at 32 MiB the sender grew by about 380 bytes per push
    /// until full, and the translator peaked 33 MiB higher (103 against 69–70 MiB) at the same
    /// CPU per event, its reads served from the kernel's page cache instead.
    public var sqliteCacheMiB: Int
    /// `liveline.api.*`: the token-registration api.
    public var api: APISettings
    /// `liveline.ops.*`: where the translator and sender serve `/metrics`, `/healthz` and `/readyz`.
    public var ops: OpsSettings

    /// The ops port of a worker.
    public struct OpsSettings: Sendable {
        /// `liveline.ops.host`, default `127.0.0.1` (containers set `0.0.0.0`).
        public var host: String
        /// `liveline.ops.port`; unset, each role takes its own default
        /// (``LivelineRole/defaultOpsPort``), so a translator and a sender run side by side
        /// on one host as they come.
        public var port: Int?
        /// `liveline.ops.stall-after-seconds`, default 60: `/healthz` answers 503 when the work
        /// loop holds work and has finished none for this long.
        public var stallAfter: Duration
        /// `liveline.ops.drain-timeout-seconds`, default 40: how long a worker may drain after
        /// SIGTERM or SIGINT before it exits anyway, saying so. What it had not acked goes
        /// back to the queue when its connection closes, so the cost is duplicates, never a
        /// loss. Under the manifests' termination grace (45 s and 60 s), so the worker, not
        /// the kubelet's SIGKILL, ends it and the log says why.
        public var drainTimeout: Duration
    }

    /// Settings of the api process.
    public struct APISettings: Sendable {
        /// `liveline.api.host`, default `127.0.0.1` (containers set `0.0.0.0`).
        public var host: String
        /// `liveline.api.port`, default 8080.
        public var port: Int
        /// `liveline.api.jwt.hs256-secret` / `liveline.api.jwt.hs256-secret-file` (secret), or
        /// `liveline.api.jwt.es256-public-key-file`: how app JWTs are verified. One is required
        /// to run the api.
        public var jwtKey: JWTKey?
        /// `liveline.api.jwt.issuer`, default `liveline`.
        public var issuer: String
        /// `liveline.api.jwt.audience`, default `liveline-api`.
        public var audience: String
        /// `liveline.api.topic-kinds`, default `team,league,game`: what users may follow.
        public var topicKinds: [String]
        /// `liveline.api.token-environments`, default `production,sandbox`: the APNs
        /// environments whose tokens the api takes.
        public var tokenEnvironments: Set<APNsEnvironment>
        /// `liveline.api.limits.*`: `user-requests-per-minute` (120), `app-requests-per-second`
        /// (1000), `devices-per-user` (20) and `follows-per-user` (500), each at least 1.
        public var limits: APILimits
        /// `liveline.api.producers-file`: the producers that may send events over HTTPS,
        /// each with the SHA-256 of its key and its domains (``ProducerSettings``). None
        /// by default: `POST /v1/events` then refuses every caller.
        public var producers: [ProducerCredential]
        /// The producers' webhooks, from their entries in the producers file.
        public var webhooks: [Webhook]
        /// `liveline.api.webhooks.give-up-seconds`, default 600: how long the api keeps posting
        /// a batch of outcomes to a webhook that fails before it gives the batch up.
        public var webhookGiveUp: Duration
        /// `liveline.api.events.max-batch-events`, default 100: the most events in one batch.
        public var maximumBatchEvents: Int
        /// `liveline.api.events.max-body-bytes`, default 1048576: the largest `POST /v1/events` body.
        public var maximumEventBodyBytes: Int
        /// `liveline.api.events.publish-timeout-ms`, default 5000: how long the api waits for
        /// the broker's confirm before it answers `503`.
        public var publishTimeout: Duration
    }

    /// How the api verifies app tokens.
    public enum JWTKey: Sendable {
        case hs256(secret: String)
        case es256(publicKeyPEM: String)
    }

    /// Reads settings from `config` (already scoped to `liveline`).
    public init(config: ConfigReader) throws {
        let amqpURL = try Self.secret(config, "amqp.url") ?? "amqp://guest:guest@127.0.0.1:5672/%2f"
        self.amqp = try AMQPConfiguration(url: amqpURL)
        let storeURL = try Self.secret(config, "store.url") ?? "sqlite:.liveline/liveline.sqlite"
        self.store = try StoreLocation(url: storeURL)
        self.sqliteCacheMiB = try Self.integer(config, "store.sqlite-cache-mib") ?? 2
        guard (1...1024).contains(sqliteCacheMiB) else {
            throw SettingsError("liveline.store.sqlite-cache-mib must be 1 to 1024 (MiB), not \(sqliteCacheMiB)")
        }

        var jwtKey: JWTKey? = nil
        if let secret = try Self.secret(config, "api.jwt.hs256-secret") {
            guard secret.utf8.count >= 32 else {
                throw SettingsError("liveline.api.jwt.hs256-secret must be at least 32 bytes")
            }
            jwtKey = .hs256(secret: secret)
        } else if let path = config.string(forKey: "api.jwt.es256-public-key-file") {
            jwtKey = .es256(publicKeyPEM: try Self.read(path, for: "api.jwt.es256-public-key-file"))
        }
        let opsPort = try Self.integer(config, "ops.port")
        if let opsPort, !(0...65535).contains(opsPort) {
            throw SettingsError("liveline.ops.port must be a port number (0 to 65535), not \(opsPort)")
        }
        let stall = try Self.integer(config, "ops.stall-after-seconds") ?? 60
        guard stall >= 1 else { throw SettingsError("liveline.ops.stall-after-seconds must be at least 1") }
        let drain = try Self.integer(config, "ops.drain-timeout-seconds") ?? 40
        guard drain >= 1 else { throw SettingsError("liveline.ops.drain-timeout-seconds must be at least 1") }
        self.ops = OpsSettings(
            host: config.string(forKey: "ops.host", default: "127.0.0.1"), port: opsPort, stallAfter: .seconds(stall),
            drainTimeout: .seconds(drain))
        let apiPort = try Self.integer(config, "api.port") ?? 8080
        guard (0...65535).contains(apiPort) else {
            throw SettingsError("liveline.api.port must be a port number (0 to 65535), not \(apiPort)")
        }
        let producers = try config.string(forKey: "api.producers-file").map {
            try ProducerSettings.read(Self.read($0, for: "api.producers-file"), path: $0)
        }
        self.api = APISettings(
            host: config.string(forKey: "api.host", default: "127.0.0.1"),
            port: apiPort,
            jwtKey: jwtKey,
            issuer: config.string(forKey: "api.jwt.issuer", default: "liveline"),
            audience: config.string(forKey: "api.jwt.audience", default: "liveline-api"),
            topicKinds: try Self.topicKinds(config.string(forKey: "api.topic-kinds", default: "team,league,game")),
            tokenEnvironments: try Self.tokenEnvironments(config.string(forKey: "api.token-environments", default: "production,sandbox")),
            limits: try Self.apiLimits(config),
            producers: producers?.producers ?? [],
            webhooks: producers?.webhooks ?? [],
            webhookGiveUp: .seconds(try Self.integer(config, "api.webhooks.give-up-seconds", in: 1...86_400, default: 600)),
            maximumBatchEvents: try Self.integer(config, "api.events.max-batch-events", in: 1...10_000, default: 100),
            maximumEventBodyBytes: try Self.integer(
                config, "api.events.max-body-bytes", in: 1024...(64 * 1024 * 1024), default: 1024 * 1024),
            publishTimeout: .milliseconds(try Self.integer(config, "api.events.publish-timeout-ms", in: 100...600_000, default: 5_000))
        )
    }

    /// Loads settings from the environment and, if given, a JSON file.
    public static func load(file: String?, environment: [String: String] = ProcessInfo.processInfo.environment)
        async throws -> LivelineSettings
    {
        try LivelineSettings(config: try await reader(file: file, environment: environment))
    }

    /// The configuration every setting type reads: environment over the JSON file, scoped to
    /// `liveline`.
    public static func reader(file: String?, environment: [String: String] = ProcessInfo.processInfo.environment)
        async throws -> ConfigReader
    {
        var providers: [any ConfigProvider] = [EnvironmentVariablesProvider(environmentVariables: environment)]
        if let file {
            providers.append(try await FileProvider<JSONSnapshot>(filePath: .init(file)))
        }
        return ConfigReader(providers: providers).scoped(to: "liveline")
    }

    /// A comma-separated list of topic kinds, each letters, digits, `-` or `_`.
    static func topicKinds(_ list: String) throws -> [String] {
        let kinds = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard !kinds.isEmpty, kinds.allSatisfy({ kind in
            !kind.isEmpty && kind.count <= 32 && kind.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == "_" }
        }) else {
            throw SettingsError("liveline.api.topic-kinds must be a comma-separated list of words, such as team,league,game")
        }
        return kinds
    }

    static func apiLimits(_ config: ConfigReader) throws -> APILimits {
        let defaults = APILimits()
        let most = 1_000_000_000
        return APILimits(
            userRequestsPerMinute: try integer(config, "api.limits.user-requests-per-minute", in: 1...most, default: defaults.userRequestsPerMinute),
            appRequestsPerSecond: try integer(config, "api.limits.app-requests-per-second", in: 1...most, default: defaults.appRequestsPerSecond),
            devicesPerUser: try integer(config, "api.limits.devices-per-user", in: 1...most, default: defaults.devicesPerUser),
            followsPerUser: try integer(config, "api.limits.follows-per-user", in: 1...most, default: defaults.followsPerUser))
    }

    static func tokenEnvironments(_ list: String) throws -> Set<APNsEnvironment> {
        let names = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let environments = names.compactMap(APNsEnvironment.init(rawValue:))
        guard !names.isEmpty, environments.count == names.count else {
            throw SettingsError("liveline.api.token-environments must list production, sandbox or both, not \(list)")
        }
        return Set(environments)
    }

    /// A secret from `key`, or from the file named by `key-file`.
    /// `key` as a whole number, nil when unset. A value that is set but is not one is refused
    /// naming the key: swift-configuration's `int(forKey:)` answers nil for it, and the
    /// default would be used without a word.
    static func integer(_ config: ConfigReader, _ key: String) throws -> Int? {
        if let value = config.int(forKey: ConfigKey(key)) { return value }
        if let text = config.string(forKey: ConfigKey(key)) {
            throw SettingsError("liveline.\(key) must be a whole number, not \"\(text)\"")
        }
        return nil
    }

    /// `key` as a whole number within `range`, `fallback` when unset; a value outside it is
    /// refused naming the key and the range.
    static func integer(_ config: ConfigReader, _ key: String, in range: ClosedRange<Int>, default fallback: Int) throws -> Int {
        let value = try integer(config, key) ?? fallback
        guard range.contains(value) else {
            throw SettingsError("liveline.\(key) must be \(range.lowerBound) to \(range.upperBound), not \(value)")
        }
        return value
    }

    /// `key` as true or false, nil when unset; any other value is refused naming the key.
    static func flag(_ config: ConfigReader, _ key: String) throws -> Bool? {
        if let value = config.bool(forKey: ConfigKey(key)) { return value }
        if let text = config.string(forKey: ConfigKey(key)) {
            throw SettingsError("liveline.\(key) must be true or false, not \"\(text)\"")
        }
        return nil
    }

    static func secret(_ config: ConfigReader, _ key: String) throws -> String? {
        if let value = config.string(forKey: ConfigKey(key), isSecret: true), !value.isEmpty { return value }
        guard let path = config.string(forKey: ConfigKey(key + "-file")) else { return nil }
        return try read(path, for: key + "-file").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func read(_ path: String, for key: String) throws -> String {
        do {
            return try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw SettingsError("liveline.\(key): cannot read \(path)")
        }
    }
}

/// A setting is missing or wrong. The message names the key and never contains a secret.
public struct SettingsError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
