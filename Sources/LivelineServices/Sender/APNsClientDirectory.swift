import LivelineAPNs
import LivelineCore
import LivelineModels

// Tests: Tests/LivelineServicesTests/SenderDeliveryTests.swift, Tests/LivelineServicesTests/GamePipelineTests.swift, Tests/LivelineRuntimeTests/MultiAppSenderTests.swift

/// The APNs clients of every app a deployment pushes for. One sender serves every app;
/// each app has a client per environment (its own key's token, its own connection pool
/// to that environment's host), and a job goes to the one its target needs.
public struct APNsClientDirectory: Sendable {
    /// One app's clients.
    public struct App: Sendable {
        public var bundleID: String
        /// Where the app's broadcast channels live; a channel exists in one environment.
        public var channelEnvironment: APNsEnvironment
        public var production: APNsClient
        public var sandbox: APNsClient

        public init(bundleID: String, channelEnvironment: APNsEnvironment, production: APNsClient, sandbox: APNsClient) {
            self.bundleID = bundleID
            self.channelEnvironment = channelEnvironment
            self.production = production
            self.sandbox = sandbox
        }

        func client(for environment: APNsEnvironment) -> APNsClient {
            environment == .production ? production : sandbox
        }
    }

    private let apps: [String: App]

    /// Indexes `apps` by bundle id; a later app with the same bundle id wins (the settings
    /// refuse duplicates before this).
    public init(_ apps: [App]) {
        var index: [String: App] = [:]
        for app in apps { index[app.bundleID] = app }
        self.apps = index
    }

    /// Each client serves both environments of its app: one endpoint that plays
    /// production and sandbox alike, as the simulator does in the quickstart and benchmarks.
    public init(_ clients: [APNsClient]) {
        self.init(clients.map {
            App(bundleID: $0.bundleID, channelEnvironment: .production, production: $0, sandbox: $0)
        })
    }

    /// The client for `job`: its device token's environment, or the app's channel
    /// environment for a broadcast. Nil if this deployment has no credentials for the app.
    public func client(for job: PushJob) -> APNsClient? {
        guard let app = apps[job.bundleId] else { return nil }
        switch job.target {
        case .device(_, _, let environment): return app.client(for: environment)
        case .channel: return app.client(for: app.channelEnvironment)
        }
    }

    /// `bundleID`'s client for device tokens of `environment`; nil without credentials for the app.
    public func client(bundleID: String, environment: APNsEnvironment) -> APNsClient? {
        apps[bundleID]?.client(for: environment)
    }

    /// The environment `bundleID`'s channels live in; nil without credentials for the app.
    public func channelEnvironment(bundleID: String) -> APNsEnvironment? {
        apps[bundleID]?.channelEnvironment
    }

    /// The client that manages and broadcasts on `bundleID`'s channels: its channel environment's.
    public func channelClient(bundleID: String) -> APNsClient? {
        apps[bundleID].map { $0.client(for: $0.channelEnvironment) }
    }

    /// Every distinct client with a name for `/readyz`: `apns <bundle id> <environment>`.
    public var namedClients: [(name: String, client: APNsClient)] {
        apps.values.sorted { $0.bundleID < $1.bundleID }.flatMap { app in
            app.production === app.sandbox
                ? [("apns \(app.bundleID)", app.production)]
                : [("apns \(app.bundleID) production", app.production), ("apns \(app.bundleID) sandbox", app.sandbox)]
        }
    }

    /// The bundle ids served.
    public var bundleIDs: [String] { apps.keys.sorted() }

    /// Closes every client's connections.
    public func shutdown() async {
        for (_, client) in namedClients { await client.shutdown() }
    }
}
