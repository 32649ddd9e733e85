import Foundation

// Tests: Tests/LivelineAMQPTests/ConfigurationTests.swift, Tests/LivelineAMQPTests/AckCoalescerTests.swift

/// Where and how to connect to a RabbitMQ broker.
///
/// Build one from a URL (`amqp://user:password@host:5672/vhost?heartbeat=15`) or field by
/// field. The password is never part of ``description``.
///
/// A cluster is several brokers in one URL (`amqp://user:password@rabbit-0,rabbit-1:5673/vhost`):
/// the connection starts at the first and, when a broker cannot be reached or is lost, moves on
/// to the next, so a node that is down or cut off from the cluster costs one reconnect.
public struct AMQPConfiguration: Sendable, CustomStringConvertible {
    /// One broker of ``brokers``.
    public struct Broker: Sendable, Hashable, CustomStringConvertible {
        public var host: String
        public var port: Int

        /// `host` may be an IPv6 address, with or without its URL brackets.
        public init(host: String, port: Int) {
            self.host = Self.unbracketed(host)
            self.port = port
        }

        /// `[::1]` as a URL writes it is `::1` to the resolver.
        static func unbracketed(_ host: String) -> String {
            host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        }

        public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// The brokers to connect to, in the order they are tried; never empty.
    public var brokers: [Broker]
    /// The first broker's host.
    public var host: String {
        get { brokers[0].host }
        set { brokers[0].host = newValue }
    }
    /// The first broker's port.
    public var port: Int {
        get { brokers[0].port }
        set { brokers[0].port = newValue }
    }
    public var virtualHost: String
    public var username: String
    public var password: String
    /// Heartbeat interval asked of the broker. A broker that sends nothing for twice this long
    /// is treated as gone. 0 turns heartbeats off (not recommended).
    public var heartbeat: Duration
    /// How long to wait for TCP, TLS and the AMQP handshake, and for each broker RPC.
    public var connectTimeout: Duration
    /// How long the oldest unconfirmed publish may wait for its confirm before the connection
    /// is replaced and every unconfirmed publish sent again, to the next broker. Heartbeats
    /// catch a silent broker; this catches one that answers but never confirms. Waits while
    /// the broker blocks publishing do not count. 0 waits for ever.
    public var confirmTimeout: Duration
    /// TLS settings; `nil` means plain TCP.
    public var tls: TLS?
    /// How reconnection waits between attempts.
    public var reconnect: Backoff
    /// Publishes sent but not yet confirmed, per connection. Past this the connection waits
    /// for confirms before sending more, which bounds memory and keeps latency fair.
    public var maxUnconfirmedPublishes: Int
    /// A name shown in the broker's management UI for this connection.
    public var connectionName: String
    /// The most body bytes the connection's consumers may hold delivered and not yet settled
    /// (acked, nacked or rejected). Past it the connection reads nothing from the broker until
    /// settlements bring it back under: a bound in bytes beside the prefetch, which the broker
    /// counts in messages whatever their size. Publish confirms wait with the rest, so give
    /// it to a connection that only consumes. `nil` (the default): the prefetch alone.
    public var maximumHeldBytes: Int? = nil
    /// How long ``AMQPConnection/open()`` keeps trying for the first connection, waiting as a
    /// reconnect does between rounds of the brokers, before it fails with the last error.
    /// Zero (the default) tries each broker once: a one-shot command says at once that the
    /// broker is not there, while a worker waits for one that is still starting. Refused
    /// credentials and TLS failures end the wait at once.
    public var firstConnectionPatience: Duration = .zero

    /// TLS (amqps) settings. TLS 1.2 is the minimum version.
    public struct TLS: Sendable {
        /// PEM file of the CA(s) that sign the broker's certificate. `nil` uses the system bundle.
        public var caFile: String?
        /// Client certificate (PEM) for brokers that require one.
        public var certificateFile: String?
        /// Private key (PEM) for ``certificateFile``.
        public var keyFile: String?
        /// Verify the broker's certificate chain. Turning this off is for local tests only.
        public var verifyPeer: Bool
        /// Verify that the certificate names ``AMQPConfiguration/host``.
        public var verifyHostname: Bool

        public init(
            caFile: String? = nil,
            certificateFile: String? = nil,
            keyFile: String? = nil,
            verifyPeer: Bool = true,
            verifyHostname: Bool = true
        ) {
            self.caFile = caFile
            self.certificateFile = certificateFile
            self.keyFile = keyFile
            self.verifyPeer = verifyPeer
            self.verifyHostname = verifyHostname
        }
    }

    /// Exponential backoff with full jitter: attempt *n* waits a random time in
    /// `[initial·2ⁿ/2, initial·2ⁿ]`, capped at `maximum`.
    public struct Backoff: Sendable {
        public var initial: Duration
        public var maximum: Duration

        public init(initial: Duration = .milliseconds(200), maximum: Duration = .seconds(15)) {
            self.initial = initial
            self.maximum = maximum
        }

        /// The wait before reconnect attempt `attempt` (0-based).
        public func delay(attempt: Int, random: Double = Double.random(in: 0...1)) -> Duration {
            let exponent = min(attempt, 30)
            let ceiling = min(initial * (1 << exponent), maximum)
            return ceiling / 2 + (ceiling / 2) * random
        }
    }

    public init(
        host: String = "127.0.0.1",
        port: Int? = nil,
        virtualHost: String = "/",
        username: String = "guest",
        password: String = "guest",
        heartbeat: Duration = .seconds(15),
        connectTimeout: Duration = .seconds(10),
        confirmTimeout: Duration = .seconds(30),
        tls: TLS? = nil,
        reconnect: Backoff = Backoff(),
        maxUnconfirmedPublishes: Int = 2_000,
        connectionName: String = "liveline"
    ) {
        self.brokers = [Broker(host: host, port: port ?? (tls == nil ? 5672 : 5671))]
        self.virtualHost = virtualHost
        self.username = username
        self.password = password
        self.heartbeat = heartbeat
        self.connectTimeout = connectTimeout
        self.confirmTimeout = confirmTimeout
        self.tls = tls
        self.reconnect = reconnect
        self.maxUnconfirmedPublishes = maxUnconfirmedPublishes
        self.connectionName = connectionName
    }

    /// Parses an `amqp://` or `amqps://` URL.
    ///
    /// The path is the percent-encoded virtual host (`/%2f` or an empty path is `/`). Query
    /// parameters: `heartbeat`, `connection_timeout` and `confirm_timeout` (seconds), `cacertfile`,
    /// `certfile`, `keyfile`, `verify` (`verify_peer` or `verify_none`), `name`. Several
    /// brokers are separated by commas (`host1:5672,host2,host3:5673`); one without a port
    /// takes the scheme's.
    public init(url: String) throws(AMQPError) {
        let (url, moreBrokers) = try Self.splitBrokers(url)
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "amqp" || scheme == "amqps"
        else {
            throw AMQPError(.invalidArgument, "not an amqp:// or amqps:// URL")
        }
        var query: [String: String] = [:]
        for item in components.queryItems ?? [] { query[item.name] = item.value ?? "" }

        var tls: TLS? = nil
        if scheme == "amqps" {
            let verify = query["verify"].map { $0 != "verify_none" } ?? true
            tls = TLS(
                caFile: query["cacertfile"], certificateFile: query["certfile"], keyFile: query["keyfile"],
                verifyPeer: verify, verifyHostname: verify)
        }
        var vhost = components.percentEncodedPath
        if vhost.hasPrefix("/") { vhost.removeFirst() }
        vhost = vhost.removingPercentEncoding ?? vhost
        if vhost.isEmpty { vhost = "/" }

        func seconds(_ key: String, default value: Duration) throws(AMQPError) -> Duration {
            guard let text = query[key] else { return value }
            guard let number = Double(text), number >= 0 else {
                throw AMQPError(.invalidArgument, "URL parameter \(key) must be a number of seconds")
            }
            return .milliseconds(Int64(number * 1000))
        }

        self.init(
            host: components.host.map(Broker.unbracketed).flatMap { $0.isEmpty ? nil : $0 } ?? "127.0.0.1",
            port: components.port,
            virtualHost: vhost,
            username: components.user?.removingPercentEncoding ?? "guest",
            password: components.password?.removingPercentEncoding ?? "guest",
            heartbeat: try seconds("heartbeat", default: .seconds(15)),
            connectTimeout: try seconds("connection_timeout", default: .seconds(10)),
            confirmTimeout: try seconds("confirm_timeout", default: .seconds(30)),
            tls: tls,
            connectionName: query["name"] ?? "liveline"
        )
        for text in moreBrokers {
            guard let parts = URLComponents(string: "\(scheme)://\(text)"), let host = parts.host, !host.isEmpty,
                parts.path.isEmpty, parts.user == nil
            else {
                throw AMQPError(.invalidArgument, "broker #\(brokers.count + 1) in the URL is not host or host:port")
            }
            brokers.append(Broker(host: host, port: parts.port ?? (tls == nil ? 5672 : 5671)))
        }
    }

    /// Cuts `scheme://user:password@h1:p1,h2,h3:p3/vhost?query` into the URL of the first
    /// broker and the others' `host[:port]`, since `URLComponents` takes one host.
    private static func splitBrokers(_ url: String) throws(AMQPError) -> (url: String, more: [String]) {
        guard let schemeEnd = url.range(of: "://") else { return (url, []) }
        let authorityStart = schemeEnd.upperBound
        let authorityEnd = url[authorityStart...].firstIndex { $0 == "/" || $0 == "?" } ?? url.endIndex
        let authority = url[authorityStart..<authorityEnd]
        // Credentials may hold a comma (percent-encoded or not): hosts start after the last '@'.
        let hostsStart = authority.lastIndex(of: "@").map { authority.index(after: $0) } ?? authority.startIndex
        let hosts = authority[hostsStart...].split(separator: ",", omittingEmptySubsequences: false)
        guard hosts.count > 1 else { return (url, []) }
        // An '@' after the authority means credentials with a raw '/' or '?': the split above
        // would have cut them, and the pieces would show in logs as hosts.
        if url[authorityEnd...].prefix(while: { $0 != "?" }).contains("@") {
            throw AMQPError(.invalidArgument, "percent-encode the user name and password ('/' is %2F, '@' is %40)")
        }
        if hosts.contains(where: \.isEmpty) {
            throw AMQPError(.invalidArgument, "the URL's broker list has an empty entry")
        }
        let first = String(url[..<hostsStart]) + hosts[0] + url[authorityEnd...]
        return (first, hosts.dropFirst().map(String.init))
    }

    public var description: String {
        let scheme = tls == nil ? "amqp" : "amqps"
        let vhost = virtualHost.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? virtualHost
        return "\(scheme)://\(username)@\(brokers.map(\.description).joined(separator: ","))/\(vhost)"
    }
}

extension Duration {
    var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
