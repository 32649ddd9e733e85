// Tests: none needed (declarations only)

/// How an ``APNsSimulator`` listens and behaves.
public struct APNsSimulatorConfiguration: Sendable {
    /// A provider key the simulator trusts: tokens with this `kid` must carry this team as `iss` and
    /// verify against this public key, or the request gets 403 InvalidProviderToken.
    public struct TrustedKey: Sendable, Hashable {
        public var keyID: String
        public var teamID: String
        /// PEM of the P-256 public key (`-----BEGIN PUBLIC KEY-----`).
        public var publicKeyPEM: String

        public init(keyID: String, teamID: String, publicKeyPEM: String) {
            self.keyID = keyID
            self.teamID = teamID
            self.publicKeyPEM = publicKeyPEM
        }
    }

    /// Address to bind; loopback by default.
    public var host: String
    /// Port to bind; 0 picks a free one (read it back from ``APNsSimulator/port``).
    public var port: Int
    /// `false` serves HTTP/2 over cleartext (h2c, prior knowledge) instead of TLS.
    public var useTLS: Bool
    /// SETTINGS_MAX_CONCURRENT_STREAMS the simulator grants.
    public var maximumConcurrentStreams: Int
    /// Like APNs on a token connection: advertise 1 stream until the first request with a valid provider
    /// token, then raise to ``maximumConcurrentStreams`` with a new SETTINGS frame.
    public var startWithOneStream: Bool
    /// Keys whose signatures are verified. Empty: only the token's shape and age are checked.
    public var trustedKeys: [TrustedKey]
    /// Keep every accepted push for the query API (turn off for long benchmarks).
    public var recordDeliveries: Bool
    /// APNs' limit for device pushes (4096 bytes) and broadcasts.
    public var maximumPayloadSize: Int
    /// Provider tokens older than this are answered with 403 ExpiredProviderToken (APNs: one hour).
    public var providerTokenMaximumAge: Double
    /// Send GOAWAY on a connection after this many streams (the last one is still answered).
    public var goAwayAfterStreams: Int?
    /// On how many connections (in accept order) the GOAWAY fault fires; `nil` means all.
    public var goAwayConnectionLimit: Int?
    /// Answer 200s with `apns-unique-id`, as the sandbox does.
    public var sendUniqueID: Bool

    public init(
        host: String = "127.0.0.1",
        port: Int = 0,
        useTLS: Bool = true,
        maximumConcurrentStreams: Int = 1000,
        startWithOneStream: Bool = false,
        trustedKeys: [TrustedKey] = [],
        recordDeliveries: Bool = true,
        maximumPayloadSize: Int = 4096,
        providerTokenMaximumAge: Double = 3600,
        goAwayAfterStreams: Int? = nil,
        goAwayConnectionLimit: Int? = 1,
        sendUniqueID: Bool = true
    ) {
        self.host = host
        self.port = port
        self.useTLS = useTLS
        self.maximumConcurrentStreams = maximumConcurrentStreams
        self.startWithOneStream = startWithOneStream
        self.trustedKeys = trustedKeys
        self.recordDeliveries = recordDeliveries
        self.maximumPayloadSize = maximumPayloadSize
        self.providerTokenMaximumAge = providerTokenMaximumAge
        self.goAwayAfterStreams = goAwayAfterStreams
        self.goAwayConnectionLimit = goAwayConnectionLimit
        self.sendUniqueID = sendUniqueID
    }
}
