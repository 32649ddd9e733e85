import LivelineAPNs

/// The APNs client of each app a deployment pushes for, by bundle id. One sender serves
/// every app; each app has its own key, token and connection pool.
public struct APNsClientDirectory: Sendable {
    private let clients: [String: APNsClient]

    /// Indexes `clients` by their bundle id; a later client with the same bundle id wins.
    public init(_ clients: [APNsClient]) {
        var index: [String: APNsClient] = [:]
        for client in clients { index[client.bundleID] = client }
        self.clients = index
    }

    /// The client of `bundleID`, or nil if this deployment has no credentials for it.
    public func client(forBundle bundleID: String) -> APNsClient? {
        clients[bundleID]
    }

    /// The bundle ids served.
    public var bundleIDs: [String] { clients.keys.sorted() }
}
