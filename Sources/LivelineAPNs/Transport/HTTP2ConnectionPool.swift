import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

// Tests: Tests/LivelineAPNsTests/ConnectionTests.swift, Tests/LivelineAPNsTests/ConnectionFailureLogTests.swift

/// Long-lived HTTP/2 connections to one endpoint, shared by every request of a client.
///
/// A request leases one stream slot; it waits (never fails) while every connection is at the
/// server's SETTINGS_MAX_CONCURRENT_STREAMS, and a new connection is opened only when all are full and
/// fewer than the maximum exist.
final class HTTP2ConnectionPool: Sendable {
    private struct State {
        var machine: ConnectionPoolStateMachine
        var connections: [Int: HTTP2Connection] = [:]
        /// Connections that failed before they were ready since the last error logged.
        var failuresUnreported = 0
        var lastFailureReport: NIODeadline?
        /// Connections that failed before they were ready since one last became ready.
        var consecutiveFailures = 0
        var lastFailure: String?
        /// Totals since the pool was made, for the metrics.
        var goAwaysReceived = 0
        var connectionsOpened = 0
        var connectionsFailed = 0
        var waiters: [Int: CheckedContinuation<HTTP2Connection, any Error>] = [:]
        /// Waiter ids handed out whose continuation is not registered yet.
        var registering: Set<Int> = []
        /// Waiters cancelled before their continuation was registered.
        var cancelledEarly: Set<Int> = []
        var nextWaiterID = 0
    }

    struct ShutdownError: Error {}
    struct ConnectError: Error {}

    private let endpoint: APNsEndpoint
    private let sslContext: NIOSSLContext?
    private let group: any EventLoopGroup
    private let configuration: APNsConnectionPoolConfiguration
    private let logger: Logger
    private let state: NIOLockedValueBox<State>

    init(
        endpoint: APNsEndpoint,
        group: any EventLoopGroup,
        configuration: APNsConnectionPoolConfiguration,
        logger: Logger
    ) throws {
        self.endpoint = endpoint
        self.group = group
        self.configuration = configuration
        self.logger = logger
        self.sslContext = try Self.makeSSLContext(trust: endpoint.trust)
        self.state = NIOLockedValueBox(
            State(machine: ConnectionPoolStateMachine(maximumConnections: configuration.maximumConnections))
        )
    }

    static func makeSSLContext(trust: APNsEndpoint.Trust) throws -> NIOSSLContext? {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        tls.minimumTLSVersion = .tlsv12
        switch trust {
        case .plaintext:
            return nil
        case .systemDefault:
            tls.trustRoots = .default
        case .caFile(let path):
            tls.trustRoots = .file(path)
        case .pem(let pem):
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
        }
        return try NIOSSLContext(configuration: tls)
    }

    /// Waits for a free stream slot and returns the connection that has it. Call ``release(_:)`` after.
    func lease() async throws -> HTTP2Connection {
        if let connection = state.withLockedValue({ state -> HTTP2Connection? in
            state.machine.leaseImmediately().map { state.connections[$0]! }
        }) {
            return connection
        }
        let waiter = state.withLockedValue { state -> Int in
            let waiter = state.nextWaiterID
            state.nextWaiterID += 1
            state.registering.insert(waiter)
            return waiter
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                enum Next {
                    case resume(HTTP2Connection)
                    case fail(any Error)
                    case wait(ConnectionPoolStateMachine.Actions)
                }
                let next = state.withLockedValue { state -> Next in
                    state.registering.remove(waiter)
                    if state.cancelledEarly.remove(waiter) != nil { return .fail(CancellationError()) }
                    switch state.machine.lease(waiter: waiter) {
                    case .use(let id):
                        return .resume(state.connections[id]!)
                    case .fail:
                        return .fail(ShutdownError())
                    case .wait(let actions):
                        state.waiters[waiter] = continuation
                        return .wait(actions)
                    }
                }
                switch next {
                case .resume(let connection):
                    continuation.resume(returning: connection)
                case .fail(let error):
                    continuation.resume(throwing: error)
                case .wait(let actions):
                    perform(actions)
                }
            }
        } onCancel: {
            // A cancelled request stops waiting for a slot; one already served keeps its slot and
            // the caller releases it as usual.
            let continuation = state.withLockedValue { state -> CheckedContinuation<HTTP2Connection, any Error>? in
                if state.registering.contains(waiter) {
                    state.cancelledEarly.insert(waiter)
                    return nil
                }
                guard state.machine.cancel(waiter: waiter) else { return nil }
                return state.waiters.removeValue(forKey: waiter)
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    func release(_ connection: HTTP2Connection) {
        transition { $0.release(connection.id) }
    }

    func connectionReady(_ connection: HTTP2Connection, maximumStreams: Int) {
        logger.debug("apns connection ready", metadata: APNsLogKey.metadata([.connection: "\(connection.id)", .maximumStreams: "\(maximumStreams)"]))
        let actions = state.withLockedValue { state in
            state.connections[connection.id] = connection
            state.consecutiveFailures = 0
            state.connectionsOpened += 1
            return state.machine.connectionReady(connection.id, maximumStreams: maximumStreams)
        }
        perform(actions)
    }

    func connection(_ id: Int, maximumStreamsChanged maximumStreams: Int) {
        logger.debug("apns max streams changed", metadata: APNsLogKey.metadata([.connection: "\(id)", .maximumStreams: "\(maximumStreams)"]))
        transition { $0.maximumStreamsChanged(id, to: maximumStreams) }
    }

    func connectionGoingAway(_ id: Int) {
        logger.info("apns GOAWAY, draining connection", metadata: APNsLogKey.metadata([.connection: "\(id)"]))
        state.withLockedValue { $0.goAwaysReceived += 1 }
        transition { $0.goingAway(id) }
    }

    func connectionClosed(_ id: Int, wasReady: Bool, error: (any Error)? = nil) {
        logger.debug("apns connection closed", metadata: APNsLogKey.metadata([.connection: "\(id)", .wasReady: "\(wasReady)"]))
        if !wasReady { connectionFailed(id, error: error) }
        let actions = state.withLockedValue { state in
            state.connections[id] = nil
            return state.machine.closed(id)
        }
        perform(actions)
    }

    /// Open connections, and failures to open one since one last became ready.
    var connectionStatus: APNsConnectionStatus {
        state.withLockedValue { state in
            APNsConnectionStatus(
                openConnections: state.connections.count, consecutiveFailures: state.consecutiveFailures,
                lastFailure: state.lastFailure, goAwaysReceived: state.goAwaysReceived,
                connectionsOpened: state.connectionsOpened, connectionsFailed: state.connectionsFailed)
        }
    }

    /// Closes every connection and fails waiting requests.
    func shutdown() async {
        let (actions, channels) = state.withLockedValue { state in
            (state.machine.shutdown(), state.connections.values.map(\.channel))
        }
        perform(actions)
        for channel in channels {
            try? await channel.close()
        }
    }

    private func transition(_ body: (inout ConnectionPoolStateMachine) -> ConnectionPoolStateMachine.Actions) {
        let actions = state.withLockedValue { body(&$0.machine) }
        perform(actions)
    }

    /// Performs a transition's I/O outside the lock.
    private func perform(_ actions: ConnectionPoolStateMachine.Actions) {
        if actions.handOffs.isEmpty && actions.fail.isEmpty && actions.close.isEmpty && actions.startConnection == nil {
            return
        }
        let (resumes, lost, failures, closing) = state.withLockedValue { state in
            // The machine's hand-off and this lookup are two critical sections, so the
            // connection can close in between; the request was not sent, so its caller gets a
            // retriable error instead of a connection that is gone.
            var lost: [CheckedContinuation<HTTP2Connection, any Error>] = []
            let resumes = actions.handOffs.compactMap { handOff -> (CheckedContinuation<HTTP2Connection, any Error>, HTTP2Connection)? in
                guard let continuation = state.waiters.removeValue(forKey: handOff.waiter) else { return nil }
                guard let connection = state.connections[handOff.connection] else {
                    lost.append(continuation)
                    return nil
                }
                return (continuation, connection)
            }
            let failures = actions.fail.compactMap { state.waiters.removeValue(forKey: $0) }
            let closing = actions.close.compactMap { state.connections[$0] }
            return (resumes, lost, failures, closing)
        }
        for (continuation, connection) in resumes {
            continuation.resume(returning: connection)
        }
        for continuation in lost {
            continuation.resume(throwing: ConnectError())
        }
        for continuation in failures {
            continuation.resume(throwing: state.withLockedValue { $0.machine.isShutdown } ? ShutdownError() : ConnectError())
        }
        for connection in closing {
            connection.close()
        }
        if let id = actions.startConnection {
            startConnection(id)
        }
    }

    private func startConnection(_ id: Int) {
        logger.debug("apns opening connection", metadata: APNsLogKey.metadata([.connection: "\(id)", .host: endpoint.host]))
        HTTP2Connection.connect(
            id: id,
            endpoint: endpoint,
            sslContext: sslContext,
            group: group,
            configuration: configuration,
            pool: self
        ).whenFailure { [self] error in
            connectionClosed(id, wasReady: false, error: error)
        }
    }

    /// A connection that never became ready (refused, TLS handshake failed, no HTTP/2): no push
    /// can go out through it, so this is an error at the default log level, with its cause.
    /// Repeats are summed into one line per 30 seconds, so a broken endpoint does not flood.
    private func connectionFailed(_ id: Int, error: (any Error)?) {
        let now = NIODeadline.now()
        let cause = error.map { "\($0)" } ?? "closed by the server during setup"
        let report: Int? = state.withLockedValue { state in
            state.consecutiveFailures += 1
            state.connectionsFailed += 1
            state.lastFailure = cause
            state.failuresUnreported += 1
            if let last = state.lastFailureReport, now - last < .seconds(30) { return nil }
            defer {
                state.failuresUnreported = 0
                state.lastFailureReport = now
            }
            return state.failuresUnreported
        }
        guard let failures = report else { return }
        logger.error(
            "apns connection failed before it was ready; pushes wait and are retried",
            metadata: APNsLogKey.metadata([
                .connection: "\(id)", .host: "\(endpoint.host):\(endpoint.port)",
                .error: "\(cause)", .failures: "\(failures)",
            ]))
    }
}
