// Tests: Tests/LivelineAPNsTests/BroadcastTests.swift, Tests/LivelineAPNsTests/ConnectionTests.swift

/// Everything one ``APNsClient`` needs: which app it pushes for, with which key, to which servers.
public struct APNsClientConfiguration: Sendable {
    /// The app's bundle id, e.g. `com.example.rides`. The topic becomes `<bundleID>.push-type.liveactivity`.
    public var bundleID: String
    /// The Apple developer team id (`iss` claim).
    public var teamID: String
    /// The key id of the .p8 key (`kid` header).
    public var keyID: String
    /// The .p8 key as PEM text. Never logged.
    public var privateKeyPEM: String
    /// Where device and broadcast pushes go (`api.push.apple.com`, the sandbox, or a simulator).
    public var endpoint: APNsEndpoint
    /// Where channel management requests go; a separate host and port at Apple.
    public var channelManagementEndpoint: APNsEndpoint
    /// Connection pool settings.
    public var pool: APNsConnectionPoolConfiguration

    public init(
        bundleID: String,
        teamID: String,
        keyID: String,
        privateKeyPEM: String,
        endpoint: APNsEndpoint,
        channelManagementEndpoint: APNsEndpoint? = nil,
        pool: APNsConnectionPoolConfiguration = .init()
    ) {
        self.bundleID = bundleID
        self.teamID = teamID
        self.keyID = keyID
        self.privateKeyPEM = privateKeyPEM
        self.endpoint = endpoint
        self.channelManagementEndpoint = channelManagementEndpoint ?? endpoint
        self.pool = pool
    }

    /// The Live Activity topic APNs expects for this app.
    public var liveActivityTopic: String { "\(bundleID).push-type.liveactivity" }
}

/// How many connections a client keeps and how it checks them.
public struct APNsConnectionPoolConfiguration: Sendable, Hashable {
    /// Upper bound on open connections to one endpoint. They are opened lazily, only when every open
    /// connection has no free stream, and kept open: APNs treats connect/disconnect churn as abuse.
    public var maximumConnections: Int
    /// Upper bound on concurrent streams per connection, applied on top of the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS (which wins when lower).
    ///
    /// Deliberately below what APNs grants (up to 1000): swift-nio-http2's per-stream bookkeeping
    /// costs grow with the number of open streams, and several connections spread over the event
    /// loops' threads; 4 × 100 measured ~50% faster than 1 × 1000 on two cores.
    public var maximumStreamsPerConnection: Int
    /// How often an idle-check PING is sent on each connection.
    public var pingInterval: Duration
    /// A connection whose PING is not acknowledged within this time is closed and replaced.
    public var pingTimeout: Duration
    /// Connect + TLS handshake + first SETTINGS must finish within this time.
    public var connectTimeout: Duration
    /// How often a request whose stream APNs never processed (GOAWAY above last-stream-id, refused
    /// stream) is moved to another connection before giving up with a retriable error.
    public var maximumUnprocessedRetries: Int
    /// A request with no complete response after this long is cancelled (RST_STREAM) and fails with a
    /// retriable error; PING catches dead connections, this catches a stuck stream on a live one.
    public var requestTimeout: Duration

    public init(
        maximumConnections: Int = 4,
        maximumStreamsPerConnection: Int = 100,
        pingInterval: Duration = .seconds(60),
        pingTimeout: Duration = .seconds(10),
        connectTimeout: Duration = .seconds(10),
        maximumUnprocessedRetries: Int = 5,
        requestTimeout: Duration = .seconds(30)
    ) {
        self.maximumConnections = maximumConnections
        self.maximumStreamsPerConnection = maximumStreamsPerConnection
        self.pingInterval = pingInterval
        self.pingTimeout = pingTimeout
        self.connectTimeout = connectTimeout
        self.maximumUnprocessedRetries = maximumUnprocessedRetries
        self.requestTimeout = requestTimeout
    }
}
