// Tests: Tests/LivelineAPNsTests/ConnectionFailureLogTests.swift

/// Whether an APNs client can reach APNs, as readiness sees it.
public struct APNsConnectionStatus: Sendable, Hashable {
    /// Connections open now.
    public var openConnections: Int
    /// Connections that failed before they were ready (refused, TLS handshake, no HTTP/2)
    /// since one last became ready.
    public var consecutiveFailures: Int
    /// The cause of the last such failure.
    public var lastFailure: String?
    /// GOAWAY frames received since the client was made.
    public var goAwaysReceived: Int
    /// Connections that became ready since the client was made.
    public var connectionsOpened: Int
    /// Connections that failed before they were ready since the client was made.
    public var connectionsFailed: Int

    public init(
        openConnections: Int, consecutiveFailures: Int, lastFailure: String?, goAwaysReceived: Int = 0,
        connectionsOpened: Int = 0, connectionsFailed: Int = 0
    ) {
        self.openConnections = openConnections
        self.consecutiveFailures = consecutiveFailures
        self.lastFailure = lastFailure
        self.goAwaysReceived = goAwaysReceived
        self.connectionsOpened = connectionsOpened
        self.connectionsFailed = connectionsFailed
    }

    /// No connection is open and the last attempts all failed: no push can go out.
    public var isFailing: Bool { openConnections == 0 && consecutiveFailures >= 2 }
}
