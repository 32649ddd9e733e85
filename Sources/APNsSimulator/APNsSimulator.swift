import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

// Tests: Tests/LivelineAPNsTests/DevicePushTests.swift, Tests/LivelineAPNsTests/SimulatorInspectionTests.swift, Tests/LivelineAPNsTests/BroadcastTests.swift

/// An in-process server that behaves like APNs over HTTP/2 + TLS, for tests, the quickstart and
/// benchmarks.
///
/// ```swift
/// let simulator = try APNsSimulator()
/// try await simulator.start()
/// // point a client at 127.0.0.1:simulator.port, trusting simulator.certificatePEM
/// let received = simulator.deliveries(toDevice: token)
/// try await simulator.stop()
/// ```
///
/// It is a `Sendable` class rather than an actor: the query and fault API is synchronous and cheap,
/// and the request hot path must not hop to an actor. All state sits behind one lock.
public final class APNsSimulator: Sendable {
    /// The configuration it was created with.
    public let configuration: APNsSimulatorConfiguration
    /// PEM of the self-signed certificate generated at start-up. Trust it as a CA
    /// (`APNsEndpoint.Trust.pem`). Empty when TLS is off.
    public let certificatePEM: String

    private let privateKeyPEM: String
    private let core: SimulatorCore
    private let group: any EventLoopGroup
    private let serverChannel = NIOLockedValueBox<(any Channel)?>(nil)

    /// Generates the certificate; binds nothing until ``start()``.
    public init(
        configuration: APNsSimulatorConfiguration = .init(),
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) throws {
        self.configuration = configuration
        self.group = eventLoopGroup
        self.core = try SimulatorCore(configuration: configuration)
        if configuration.useTLS {
            let certificate = try SelfSignedCertificate.generate()
            self.certificatePEM = certificate.certificatePEM
            self.privateKeyPEM = certificate.privateKeyPEM
        } else {
            self.certificatePEM = ""
            self.privateKeyPEM = ""
        }
    }

    /// Binds and starts accepting connections. Returns the bound port.
    @discardableResult
    public func start() async throws -> Int {
        let sslContext: NIOSSLContext?
        if configuration.useTLS {
            var tls = TLSConfiguration.makeServerConfiguration(
                certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(certificatePEM.utf8), format: .pem))],
                privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem))
            )
            tls.applicationProtocols = ["h2"]
            tls.minimumTLSVersion = .tlsv12
            sslContext = try NIOSSLContext(configuration: tls)
        } else {
            sslContext = nil
        }
        let core = self.core
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    core.state.withLockedValue { $0.statistics.connectionsAccepted += 1 }
                    let sync = channel.pipeline.syncOperations
                    if let sslContext {
                        try sync.addHandler(NIOSSLServerHandler(context: sslContext))
                    }
                    try sync.addHandler(SimulatorConnectionHandler(core: core))
                }
            }
            .bind(host: configuration.host, port: configuration.port)
            .get()
        serverChannel.withLockedValue { $0 = channel }
        return channel.localAddress?.port ?? 0
    }

    /// The bound port (0 before ``start()``).
    public var port: Int {
        serverChannel.withLockedValue { $0?.localAddress?.port ?? 0 }
    }

    /// Stops accepting connections. Established connections are closed by their clients.
    public func stop() async throws {
        let channel = serverChannel.withLockedValue { channel -> (any Channel)? in
            defer { channel = nil }
            return channel
        }
        try await channel?.close()
    }

    // MARK: Recorded deliveries

    /// Every push accepted for this device token, in arrival order, with the broadcasts it
    /// received on the channels its activities were started on (`input-push-channel`) until
    /// their end, as the phone would show them.
    public func deliveries(toDevice deviceToken: String) -> [APNsSimulatorDelivery] {
        core.state.withLockedValue { $0.deliveries(toDevice: deviceToken) }
    }

    /// Every broadcast accepted on this channel, in arrival order.
    public func deliveries(toChannel channelID: String) -> [APNsSimulatorDelivery] {
        core.state.withLockedValue { $0.channelDeliveries[channelID] ?? [] }
    }

    /// How many device pushes were accepted in total.
    public var deliveredDeviceCount: Int {
        core.state.withLockedValue { $0.deviceDeliveries.values.reduce(0) { $0 + $1.count } }
    }

    /// The ids of the live channels of an app, in creation order.
    public func channelIDs(bundleID: String) -> [String] {
        core.state.withLockedValue { state in
            state.channelOrder.filter { state.channels[$0]?.bundleID == bundleID }
        }
    }

    /// Counters since start.
    public var statistics: APNsSimulatorStatistics {
        core.state.withLockedValue { $0.statistics }
    }

    // MARK: Fault injection

    /// Makes requests to this device token misbehave.
    /// - Parameter times: how many requests it applies to; `nil` for all of them.
    public func injectFault(_ fault: APNsSimulatorFault, forDevice deviceToken: String, times: Int? = nil) {
        core.state.withLockedValue { $0.deviceFaults[deviceToken] = .init(fault: fault, remaining: times) }
    }

    /// Makes a random share of device pushes misbehave, e.g. `[(.serviceUnavailable, 0.01)]`.
    public func injectRandomFaults(_ faults: [(fault: APNsSimulatorFault, probability: Double)]) {
        core.state.withLockedValue { $0.randomFaults = faults }
    }
}
