import Foundation
import PostgresNIO

/// Where the PostgreSQL store connects, with defaults for a local server.
public struct PostgresStoreConfiguration: Sendable {
    public var host: String
    public var port: Int
    public var username: String
    /// Read it from a file or the environment; it is never logged.
    public var password: String?
    public var database: String
    /// The schema the tables live in (`search_path`); `nil` keeps the server's default (`public`).
    public var schema: String?
    /// Connections the client's pool may open.
    public var maximumConnections: Int
    /// TLS for the connection; `.disable` only on loopback or a private network.
    public var tls: PostgresClient.Configuration.TLS

    public init(
        host: String = "127.0.0.1", port: Int = 5432, username: String = "liveline", password: String? = nil,
        database: String = "liveline", schema: String? = nil, maximumConnections: Int = 16,
        tls: PostgresClient.Configuration.TLS = .disable
    ) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.schema = schema
        self.maximumConnections = maximumConnections
        self.tls = tls
    }

    /// Reads `postgres://user:password@host:port/database`; the rest keeps its defaults.
    public init(url: String) throws {
        guard let components = URLComponents(string: url), let scheme = components.scheme,
            ["postgres", "postgresql"].contains(scheme), let host = components.host, !host.isEmpty
        else { throw StoreError.invalidArgument("not a postgres:// url") }
        self.init(
            host: host, port: components.port ?? 5432, username: components.user ?? "liveline",
            password: components.password, database: components.path.isEmpty ? "liveline" : String(components.path.dropFirst()))
    }

    /// The postgres-nio client configuration these settings describe.
    public var clientConfiguration: PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: tls)
        configuration.options.maximumConnections = maximumConnections
        if let schema { configuration.options.additionalStartupParameters = [("search_path", schema)] }
        return configuration
    }
}
