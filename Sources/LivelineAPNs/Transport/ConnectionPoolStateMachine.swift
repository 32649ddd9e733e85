import DequeModule

// Tests: Tests/LivelineAPNsTests/ModelTests.swift

/// The connection pool's decisions, with no I/O: which connection a request uses, when to open a
/// connection, when to close one, and which waiting requests get a stream slot.
///
/// Waiters and connections are plain integer ids; the pool maps them to continuations and channels
/// and performs the returned ``Actions`` outside its lock.
struct ConnectionPoolStateMachine: Sendable {
    enum ConnectionState: Sendable, Equatable {
        /// TCP/TLS/first SETTINGS under way.
        case connecting
        /// Usable up to `maximumStreams` concurrent streams.
        case ready
        /// GOAWAY received or closing: finishes its streams, takes no new ones.
        case draining
    }

    struct Connection: Sendable, Equatable {
        var state: ConnectionState
        var maximumStreams: Int
        var inFlight: Int
    }

    /// What the pool must do after a transition.
    struct Actions: Sendable, Equatable {
        /// Waiter id → connection id: resume the waiter with a slot on that connection.
        var handOffs: [(waiter: Int, connection: Int)] = []
        /// Open a new connection with this id.
        var startConnection: Int?
        /// Close these connections (drained).
        var close: [Int] = []
        /// Fail these waiters (no connection could be made, or shutdown).
        var fail: [Int] = []

        static func == (lhs: Actions, rhs: Actions) -> Bool {
            lhs.handOffs.map { [$0.waiter, $0.connection] } == rhs.handOffs.map { [$0.waiter, $0.connection] }
                && lhs.startConnection == rhs.startConnection && lhs.close == rhs.close && lhs.fail == rhs.fail
        }
    }

    enum LeaseDecision: Sendable, Equatable {
        case use(connection: Int)
        case wait(Actions)
        case fail
    }

    let maximumConnections: Int
    private(set) var connections: [Int: Connection] = [:]
    /// Connection ids, oldest first: requests fill the oldest connection before touching newer ones,
    /// so a burst does not leave many half-used connections behind.
    private var order: [Int] = []
    private var waiters = Deque<Int>()
    private var nextConnectionID = 0
    private(set) var isShutdown = false

    init(maximumConnections: Int) {
        self.maximumConnections = max(1, maximumConnections)
    }

    /// A slot right now, without queueing; `nil` if the caller must wait.
    mutating func leaseImmediately() -> Int? {
        guard !isShutdown, waiters.isEmpty, let id = firstAvailable() else { return nil }
        connections[id]!.inFlight += 1
        return id
    }

    mutating func lease(waiter: Int) -> LeaseDecision {
        if isShutdown { return .fail }
        if waiters.isEmpty, let id = firstAvailable() {
            connections[id]!.inFlight += 1
            return .use(connection: id)
        }
        waiters.append(waiter)
        var actions = Actions()
        actions.startConnection = startConnectionIfUseful()
        return .wait(actions)
    }

    /// A waiter gave up (cancelled); drop it if it has not been served yet. Returns whether it was queued.
    mutating func cancel(waiter: Int) -> Bool {
        guard let index = waiters.firstIndex(of: waiter) else { return false }
        waiters.remove(at: index)
        return true
    }

    mutating func connectionReady(_ id: Int, maximumStreams: Int) -> Actions {
        guard connections[id] != nil else { return Actions() }
        connections[id]!.state = .ready
        connections[id]!.maximumStreams = max(0, maximumStreams)
        return serveWaiters()
    }

    mutating func maximumStreamsChanged(_ id: Int, to maximumStreams: Int) -> Actions {
        guard connections[id] != nil else { return Actions() }
        connections[id]!.maximumStreams = max(0, maximumStreams)
        return serveWaiters()
    }

    mutating func release(_ id: Int) -> Actions {
        guard connections[id] != nil else { return Actions() }
        connections[id]!.inFlight -= 1
        if connections[id]!.state == .draining {
            var actions = Actions()
            if connections[id]!.inFlight == 0 { actions.close.append(id) }
            return actions
        }
        return serveWaiters()
    }

    mutating func goingAway(_ id: Int) -> Actions {
        guard connections[id] != nil else { return Actions() }
        connections[id]!.state = .draining
        var actions = serveWaiters()
        if connections[id]!.inFlight == 0 { actions.close.append(id) }
        return actions
    }

    /// The connection is gone (closed after being ready, or failed to come up).
    mutating func closed(_ id: Int) -> Actions {
        guard let connection = connections.removeValue(forKey: id) else { return Actions() }
        order.removeAll { $0 == id }
        let failedToConnect = connection.state == .connecting
        var actions = serveWaiters(mayStartConnection: !failedToConnect)
        if failedToConnect, !waiters.isEmpty, !connections.values.contains(where: { $0.state != .draining }) {
            // Could not connect and nothing else can serve them: fail fast rather than spin on
            // reconnects; the caller's retry policy (queue TTL tiers) provides the backoff.
            actions.fail = Array(waiters)
            waiters.removeAll()
        }
        return actions
    }

    mutating func shutdown() -> Actions {
        isShutdown = true
        var actions = Actions()
        actions.fail = Array(waiters)
        waiters.removeAll()
        actions.close = order
        return actions
    }

    private func firstAvailable() -> Int? {
        for id in order {
            let connection = connections[id]!
            if connection.state == .ready && connection.inFlight < connection.maximumStreams {
                return id
            }
        }
        return nil
    }

    private mutating func serveWaiters(mayStartConnection: Bool = true) -> Actions {
        var actions = Actions()
        while !waiters.isEmpty, let id = firstAvailable() {
            connections[id]!.inFlight += 1
            actions.handOffs.append((waiters.removeFirst(), id))
        }
        if !waiters.isEmpty, mayStartConnection {
            actions.startConnection = startConnectionIfUseful()
        }
        return actions
    }

    /// Opens one more connection when requests wait, none is being opened, and the cap allows it.
    private mutating func startConnectionIfUseful() -> Int? {
        guard !isShutdown, !waiters.isEmpty else { return nil }
        let live = connections.values.filter { $0.state != .draining }
        if live.contains(where: { $0.state == .connecting }) { return nil }
        guard live.count < maximumConnections else { return nil }
        let id = nextConnectionID
        nextConnectionID += 1
        connections[id] = Connection(state: .connecting, maximumStreams: 0, inFlight: 0)
        order.append(id)
        return id
    }
}
