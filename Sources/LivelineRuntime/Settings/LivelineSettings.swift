import Configuration
import Foundation
import LivelineAMQP
import LivelineAPI
import LivelineCore
import LivelineModels
import LivelineStore

// Tests: Tests/LivelineRuntimeTests/SettingsTests.swift, Tests/LivelineRuntimeTests/ProducerSettingsTests.swift

/// The settings every process reads: the broker, the store, the api and the ops port. Each is
/// declared once in ``Setting``, with its key, default and meaning.
///
/// Environment wins over the JSON file given with `--config`, which wins over the defaults.
public struct LivelineSettings: Sendable {
    /// The broker (``Setting/amqpURL``).
    public var amqp: AMQPConfiguration
    /// The store (``Setting/storeURL``).
    public var store: StoreLocation
    /// The domains, and so the apps the deployment serves (``WorkerSettings/translator``).
    public var domains: TranslatorConfiguration
    /// Whose rows a store from before apps were kept apart holds: its domains' apps, for the
    /// store's migration to app keys.
    public var apps: AppLayout { domains.appLayout }
    /// Each SQLite connection's page cache, in MiB (``Setting/sqliteCacheMiB``).
    public var sqliteCacheMiB: Int
    /// The token-registration api.
    public var api: APISettings
    /// Where the translator and sender serve `/metrics`, `/healthz` and `/readyz`.
    public var ops: OpsSettings

    /// The ops port of a worker.
    public struct OpsSettings: Sendable {
        /// ``Setting/opsHost``.
        public var host: String
        /// ``Setting/opsPort``; unset, each role takes its own (``LivelineRole/defaultOpsPort``),
        /// so a translator and a sender run side by side on one host as they come.
        public var port: Int?
        /// ``Setting/stallAfter``: `/healthz` answers 503 when the work loop holds work and
        /// has finished none for this long.
        public var stallAfter: Duration
        /// ``Setting/drainTimeout``: how long a worker may drain after SIGTERM or SIGINT
        /// before it exits anyway, saying so. What it had not acked goes back to the queue
        /// when its connection closes, so the cost is duplicates, never a loss. Under the
        /// manifests' termination grace, so the worker, not the kubelet's SIGKILL, ends it and
        /// the log says why.
        public var drainTimeout: Duration
    }

    /// Settings of the api process; each names its declaration in ``Setting``.
    public struct APISettings: Sendable {
        /// ``Setting/apiHost``.
        public var host: String
        /// ``Setting/apiPort``.
        public var port: Int
        /// ``Setting/jwtHS256Secret`` or ``Setting/jwtES256PublicKeyFile``: how app JWTs are
        /// verified. One is required to run the api.
        public var jwtKey: JWTKey?
        /// ``Setting/jwtIssuer``.
        public var issuer: String
        /// ``Setting/jwtAudience``.
        public var audience: String
        /// ``Setting/topicKinds``: what users may follow.
        public var topicKinds: [String]
        /// ``Setting/tokenEnvironments``: the APNs environments whose tokens the api takes.
        public var tokenEnvironments: Set<APNsEnvironment>
        /// `liveline.api.limits.*`.
        public var limits: APILimits
        /// The producers in ``Setting/producersFile`` that may send events over HTTPS, each
        /// with the SHA-256 of its key and its domains (``ProducerSettings``). None by
        /// default: `POST /v1/events` then refuses every caller.
        public var producers: [ProducerCredential]
        /// The producers' webhooks, from their entries in the producers file.
        public var webhooks: [Webhook]
        /// ``Setting/webhookGiveUp``.
        public var webhookGiveUp: Duration
        /// ``Setting/maxBatchEvents``.
        public var maximumBatchEvents: Int
        /// ``Setting/maxBodyBytes``.
        public var maximumEventBodyBytes: Int
        /// ``Setting/publishTimeout``: how long the api waits for the broker's confirm before
        /// it answers `503`.
        public var publishTimeout: Duration
    }

    /// How the api verifies app tokens.
    public enum JWTKey: Sendable {
        case hs256(secret: String)
        case es256(publicKeyPEM: String)
    }

    /// Reads settings from `config` (already scoped to `liveline`).
    public init(config: ConfigReader) throws {
        amqp = try AMQPConfiguration(url: try Setting.amqpURL.secret(config)!)
        store = try StoreLocation(url: try Setting.storeURL.secret(config)!)
        domains = try WorkerSettings.translator(config)
        sqliteCacheMiB = try Setting.sqliteCacheMiB.integer(config)

        var jwtKey: JWTKey? = nil
        if let secret = try Setting.jwtHS256Secret.secret(config) {
            guard secret.utf8.count >= 32 else {
                throw SettingsError("liveline.api.jwt.hs256-secret must be at least 32 bytes")
            }
            jwtKey = .hs256(secret: secret)
        } else if let path = Setting.jwtES256PublicKeyFile.text(config) {
            jwtKey = .es256(publicKeyPEM: try Setting.read(path, for: Setting.jwtES256PublicKeyFile.name))
        }
        ops = OpsSettings(
            host: Setting.opsHost.text(config)!, port: try Setting.opsPort.integerIfSet(config),
            stallAfter: .seconds(try Setting.stallAfter.integer(config)),
            drainTimeout: .seconds(try Setting.drainTimeout.integer(config)))
        let producers = try Setting.producersFile.text(config).map {
            try ProducerSettings.read(Setting.read($0, for: Setting.producersFile.name), path: $0)
        }
        api = APISettings(
            host: Setting.apiHost.text(config)!,
            port: try Setting.apiPort.integer(config),
            jwtKey: jwtKey,
            issuer: Setting.jwtIssuer.text(config)!,
            audience: Setting.jwtAudience.text(config)!,
            topicKinds: try Self.topicKinds(Setting.topicKinds.text(config)!),
            tokenEnvironments: try Self.tokenEnvironments(Setting.tokenEnvironments.text(config)!),
            limits: APILimits(
                userRequestsPerMinute: try Setting.userRequestsPerMinute.integer(config),
                appRequestsPerSecond: try Setting.appRequestsPerSecond.integer(config),
                devicesPerUser: try Setting.devicesPerUser.integer(config),
                followsPerUser: try Setting.followsPerUser.integer(config)),
            producers: producers?.producers ?? [],
            webhooks: producers?.webhooks ?? [],
            webhookGiveUp: .seconds(try Setting.webhookGiveUp.integer(config)),
            maximumBatchEvents: try Setting.maxBatchEvents.integer(config),
            maximumEventBodyBytes: try Setting.maxBodyBytes.integer(config),
            publishTimeout: .milliseconds(try Setting.publishTimeout.integer(config))
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

    static func tokenEnvironments(_ list: String) throws -> Set<APNsEnvironment> {
        let names = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let environments = names.compactMap(APNsEnvironment.init(rawValue:))
        guard !names.isEmpty, environments.count == names.count else {
            throw SettingsError("liveline.api.token-environments must list production, sandbox or both, not \(list)")
        }
        return Set(environments)
    }
}

/// A setting is missing or wrong. The message names the key and never contains a secret.
public struct SettingsError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
