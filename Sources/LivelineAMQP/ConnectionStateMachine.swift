/// The life of one AMQP connection, with no I/O: connecting, open, blocked, reconnecting,
/// closing and closed.
///
/// The owner thread (``ConnectionDriver``) reports what happened (connected, lost, blocked,
/// a confirm, a close request, time passing) and does the I/O each returned ``Action`` asks
/// for; the machine decides what that I/O is. Time comes in as an instant of `Clock`, so a
/// test drives reconnects, heartbeats and grace periods with a clock of its own and no broker.
///
/// The machine also keeps what must survive a reconnect: the publishes not yet confirmed (they
/// go out again, first and in their order), the consumers to subscribe again and the topologies
/// to declare again. `Publish` and `Consumer` are whatever the owner thread uses for them.
struct ConnectionStateMachine<Clock: _Concurrency.Clock, Publish, Consumer> where Clock.Duration == Duration {
    typealias Instant = Clock.Instant

    struct Settings {
        /// How many brokers the configuration lists; they are tried in turn.
        var brokerCount: Int
        /// 0 turns heartbeats off.
        var heartbeat: Duration
        /// How long the oldest unconfirmed publish may wait; 0 waits for ever.
        var confirmTimeout: Duration
        var backoff: AMQPConfiguration.Backoff
        var maxUnconfirmedPublishes: Int
        /// How long the first connection keeps trying, with backoff between rounds of the
        /// brokers; zero tries each broker once (``AMQPConfiguration/firstConnectionPatience``).
        var firstConnectionPatience: Duration = .zero
        /// A value in 0...1 that spreads the reconnect waits of many clients (full jitter).
        var jitter: @Sendable () -> Double = { Double.random(in: 0...1) }

        init(_ configuration: AMQPConfiguration) {
            brokerCount = configuration.brokers.count
            heartbeat = configuration.heartbeat
            confirmTimeout = configuration.confirmTimeout
            backoff = configuration.reconnect
            maxUnconfirmedPublishes = configuration.maxUnconfirmedPublishes
            firstConnectionPatience = configuration.firstConnectionPatience
        }

        init(
            brokerCount: Int, heartbeat: Duration, confirmTimeout: Duration = .zero,
            backoff: AMQPConfiguration.Backoff, maxUnconfirmedPublishes: Int, firstConnectionPatience: Duration = .zero,
            jitter: @escaping @Sendable () -> Double
        ) {
            self.brokerCount = brokerCount
            self.heartbeat = heartbeat
            self.confirmTimeout = confirmTimeout
            self.backoff = backoff
            self.maxUnconfirmedPublishes = maxUnconfirmedPublishes
            self.firstConnectionPatience = firstConnectionPatience
            self.jitter = jitter
        }
    }

    enum State {
        /// Not started yet.
        case idle
        /// The first connection: every broker is tried once, in order, without waiting; with
        /// patience, round after round with backoff between them. `tried` counts this round's.
        case connecting(broker: Int, tried: Int)
        case open(broker: Int)
        /// The broker sent `connection.blocked` (a resource alarm): publishes wait.
        case blocked(broker: Int)
        /// The connection broke; `attempt` failed attempts since. The next one goes to `broker`.
        case reconnecting(broker: Int, attempt: Int, lastError: AMQPError)
        /// Close was requested: publishes already queued may still be confirmed until `deadline`.
        case closing(broker: Int, deadline: Instant, blocked: Bool)
        case closed
    }

    /// What to do with the connection when finishing.
    enum Farewell: Equatable {
        /// Flush acks, send `connection.close`, then free the connection.
        case close
        /// The connection broke: free it without a word to the broker.
        case drop
        /// There is no connection (between attempts).
        case none
    }

    struct Restore {
        /// Declared again, in the order first declared.
        var topologies: [AMQPTopology]
        /// Subscribed again, in the order registered.
        var consumers: [Consumer]
        /// Publishes the broker never confirmed on the lost connection: queued ahead of every
        /// other, in their original order, so they go out first.
        var resend: [Publish]
        /// Whether this replaces a lost connection (rather than being the first).
        var reconnected: Bool
    }

    struct Reconnect {
        /// Why the connection is being replaced, when it was up (free it first); nil when an
        /// attempt to connect failed and there is nothing to free.
        var dropping: AMQPError?
        var broker: Int
        var after: Duration
    }

    struct Finish {
        var farewell: Farewell
        /// Fail these with `connectionClosed`: never confirmed, or never sent.
        var failing: [Publish]
        /// End these consumers' sequences.
        var consumers: [Consumer]
        /// Set when the first connection failed on every broker, its patience spent:
        /// `open()` throws it.
        var startupError: AMQPError?
    }

    enum Action {
        case none
        /// Open a socket to broker `broker`, log in and open the publisher channel, then report
        /// ``connectionEstablished(now:)`` or ``connectFailed(_:now:)``.
        case connect(broker: Int)
        /// Declare and subscribe again on the new connection, then report ``restored(now:)``
        /// or ``connectFailed(_:now:)``.
        case restore(Restore)
        /// Wait, then report ``backoffElapsed(now:)``. Close may interrupt the wait.
        case reconnect(Reconnect)
        /// Send a heartbeat frame.
        case sendHeartbeat
        /// Answer every waiter, end every consumer and stop; the machine is closed.
        case finish(Finish)
    }

    /// How a publish ended.
    enum PublishOutcome {
        case confirmed(Publish)
        /// The broker confirmed it but no queue took it (`mandatory`): the error says why.
        case returned(Publish, AMQPError)
        case nacked(Publish)
    }

    private(set) var state: State = .idle
    private let settings: Settings
    /// How many times a lost connection was replaced.
    private(set) var reconnects = 0

    private var lastInbound: Instant
    private var lastHeartbeatSent: Instant
    /// When the first connection gives up: its start plus its patience.
    private var firstConnectionDeadline: Instant?
    /// Rounds of the brokers the first connection has failed, which its waits grow with.
    private var firstConnectionRounds = 0

    private var confirms = ConfirmTracker<Publish>()
    /// The oldest unconfirmed publish's tag and when a tick first saw it oldest, so the wait
    /// it measures never exceeds the publish's own.
    private var oldestUnconfirmed: (tag: UInt64, since: Instant)?
    /// Why the broker returned an unconfirmed publish, by delivery tag, until its confirm.
    private var returned: [UInt64: AMQPError] = [:]
    private var waiting: [Publish] = []
    private var waitingHead = 0
    /// How many publishes at the head of the queue are resends from a lost connection.
    private var resendCount = 0

    private var consumersByID: [UInt64: Consumer] = [:]
    private(set) var topologies: [AMQPTopology] = []

    init(settings: Settings, now: Instant) {
        precondition(settings.brokerCount > 0, "a connection needs a broker")
        self.settings = settings
        lastInbound = now
        lastHeartbeatSent = now
    }

    // MARK: - Reading

    /// Whether the machine is done: the owner thread stops.
    var isClosed: Bool {
        if case .closed = state { return true }
        return false
    }

    var isClosing: Bool {
        if case .closing = state { return true }
        return false
    }

    var isBlocked: Bool {
        switch state {
        case .blocked, .closing(_, _, blocked: true): return true
        default: return false
        }
    }

    /// The broker in use, or the one tried next.
    var broker: Int {
        switch state {
        case .idle, .closed: return 0
        case .connecting(let broker, _), .open(let broker), .blocked(let broker), .reconnecting(let broker, _, _),
            .closing(let broker, _, _):
            return broker
        }
    }

    /// The state as the public API shows it: blocked and closing connections are still connected.
    var publicState: AMQPConnectionState {
        switch state {
        case .idle, .connecting: return .connecting
        case .open, .blocked, .closing: return .connected
        case .reconnecting(_, let attempt, let error): return .reconnecting(attempt: attempt, lastError: error.description)
        case .closed: return .closed
        }
    }

    var unconfirmedCount: Int { confirms.count }
    var hasWaitingPublishes: Bool { waitingHead < waiting.count }

    /// Whether a publish may go out now: connected, not blocked, and under the unconfirmed limit.
    var canPublish: Bool {
        guard hasWaitingPublishes, confirms.count < settings.maxUnconfirmedPublishes else { return false }
        switch state {
        case .open, .closing(_, _, blocked: false): return true
        default: return false
        }
    }

    var consumers: Dictionary<UInt64, Consumer>.Values { consumersByID.values }

    func consumer(id: UInt64) -> Consumer? { consumersByID[id] }

    /// The unconfirmed publish with this tag.
    func unconfirmed(tag: UInt64) -> Publish? { confirms.item(tag: tag) }

    // MARK: - Lifecycle events

    mutating func start(now: Instant) -> Action {
        guard case .idle = state else { return .none }
        state = .connecting(broker: 0, tried: 0)
        firstConnectionDeadline = now.advanced(by: settings.firstConnectionPatience)
        return .connect(broker: 0)
    }

    /// The socket is open, the login accepted and the publisher channel in confirm mode.
    mutating func connectionEstablished(now: Instant) -> Action {
        let reconnected: Bool
        switch state {
        case .connecting: reconnected = false
        case .reconnecting: reconnected = true
        default: return .none
        }
        lastInbound = now
        lastHeartbeatSent = now
        return .restore(
            Restore(
                topologies: topologies, consumers: orderedConsumers(), resend: Array(waiting[waitingHead...].prefix(resendCount)),
                reconnected: reconnected))
    }

    /// Topologies and consumers are back: the connection is open.
    mutating func restored(now: Instant) -> Action {
        switch state {
        case .connecting(let broker, _):
            state = .open(broker: broker)
        case .reconnecting(let broker, _, _):
            state = .open(broker: broker)
            reconnects += 1
        default:
            return .none
        }
        lastInbound = now
        return .none
    }

    mutating func connectFailed(_ error: AMQPError, now: Instant) -> Action {
        switch state {
        case .connecting(let broker, let tried):
            let next = nextBroker(after: broker)
            guard tried + 1 >= settings.brokerCount else {
                state = .connecting(broker: next, tried: tried + 1)
                return .connect(broker: next)
            }
            // Every broker failed this round. Without patience, or past it, or on what waiting
            // cannot fix (credentials, TLS), the first connection fails with the last error;
            // otherwise it waits as a reconnect does and tries them all again.
            let wait = backoff(attempt: firstConnectionRounds)
            guard !error.isFatal, let deadline = firstConnectionDeadline, now.advanced(by: wait) < deadline else {
                return finish(.none, startupError: error)
            }
            firstConnectionRounds += 1
            state = .connecting(broker: next, tried: 0)
            return .reconnect(Reconnect(dropping: nil, broker: next, after: wait))
        case .reconnecting(let broker, let attempt, _):
            let next = nextBroker(after: broker)
            state = .reconnecting(broker: next, attempt: attempt + 1, lastError: error)
            return .reconnect(Reconnect(dropping: nil, broker: next, after: backoff(attempt: attempt + 1)))
        default:
            return .none
        }
    }

    /// The connection broke (socket error, heartbeat miss, broker close, a channel died).
    mutating func connectionLost(_ error: AMQPError, now: Instant) -> Action {
        switch state {
        case .open(let broker), .blocked(let broker):
            requeueUnconfirmed()
            // The lost broker may be down or cut off from its cluster: the next one is likelier up.
            let next = nextBroker(after: broker)
            state = .reconnecting(broker: next, attempt: 0, lastError: error)
            return .reconnect(Reconnect(dropping: error, broker: next, after: backoff(attempt: 0)))
        case .closing:
            requeueUnconfirmed()
            return finish(.drop)
        default:
            return .none
        }
    }

    mutating func backoffElapsed(now: Instant) -> Action {
        switch state {
        case .connecting(let broker, _), .reconnecting(let broker, _, _): return .connect(broker: broker)
        default: return .none
        }
    }

    mutating func brokerBlocked() {
        switch state {
        case .open(let broker): state = .blocked(broker: broker)
        case .closing(let broker, let deadline, _): state = .closing(broker: broker, deadline: deadline, blocked: true)
        default: break
        }
    }

    mutating func brokerUnblocked() {
        switch state {
        case .blocked(let broker): state = .open(broker: broker)
        case .closing(let broker, let deadline, _): state = .closing(broker: broker, deadline: deadline, blocked: false)
        default: break
        }
    }

    /// Frames (or anything) arrived from the broker: it is alive.
    mutating func inboundActivity(now: Instant) {
        lastInbound = now
    }

    /// Close gracefully: publishes already queued may be confirmed for up to `grace`.
    mutating func closeRequested(grace: Duration, now: Instant) -> Action {
        switch state {
        case .open(let broker), .blocked(let broker):
            state = .closing(broker: broker, deadline: now.advanced(by: grace), blocked: isBlocked)
            return isDrained ? finish(.close) : .none
        case .idle, .connecting, .reconnecting:
            return finish(.none)
        case .closing, .closed:
            return .none
        }
    }

    /// Time passed: heartbeats due or missed, a confirm overdue, the grace period over.
    mutating func tick(now: Instant) -> Action {
        switch state {
        case .open, .blocked, .closing: break
        default: return .none
        }
        if case .closing(_, let deadline, _) = state, isDrained || now >= deadline {
            return finish(.close)
        }
        if let overdue = overdueConfirm(now: now) {
            return connectionLost(overdue, now: now)
        }
        let heartbeat = settings.heartbeat
        guard heartbeat > .zero else { return .none }
        let silence = lastInbound.duration(to: now)
        if silence > heartbeat * 2 {
            return connectionLost(
                AMQPError(
                    .heartbeatTimeout,
                    "no data from the broker for \(Int(silence.seconds)) s (heartbeat \(Int(heartbeat.seconds)) s)"),
                now: now)
        }
        if lastHeartbeatSent.duration(to: now) >= heartbeat / 2 {
            lastHeartbeatSent = now
            return .sendHeartbeat
        }
        return .none
    }

    /// A broker can keep a publish unconfirmed for ever on a connection whose heartbeats still
    /// flow: a quorum queue that lost its leader in a partition, say. Publishers then wait with
    /// no error. When the oldest publish has waited `confirmTimeout`, the connection counts as
    /// lost, and the reconnect sends every unconfirmed publish again, to the next broker. While
    /// the broker blocks publishing (a resource alarm) the wait is the alarm's, not a fault.
    private mutating func overdueConfirm(now: Instant) -> AMQPError? {
        guard settings.confirmTimeout > .zero, let oldest = confirms.oldestTag, !isBlocked, !isClosing else {
            oldestUnconfirmed = nil
            return nil
        }
        guard let watched = oldestUnconfirmed, watched.tag == oldest else {
            oldestUnconfirmed = (oldest, now)
            return nil
        }
        let waited = watched.since.duration(to: now)
        guard waited > settings.confirmTimeout else { return nil }
        return AMQPError(
            .confirmTimeout,
            "the oldest of \(confirms.count) unconfirmed publishes waited \(Int(waited.seconds)) s for its confirm "
                + "(confirm timeout \(Int(settings.confirmTimeout.seconds)) s)")
    }

    // MARK: - Publishing

    mutating func enqueue(_ publishes: [Publish]) {
        waiting.append(contentsOf: publishes)
    }

    /// The next publish to send, now registered as unconfirmed under `tag`; nil when nothing
    /// may go out (see ``canPublish``). `resent` says it went out before, on a connection
    /// that was lost before the broker confirmed it.
    mutating func nextPublish() -> (tag: UInt64, publish: Publish, resent: Bool)? {
        guard canPublish else { return nil }
        let publish = waiting[waitingHead]
        let resent = resendCount > 0
        if resent { resendCount -= 1 }
        waitingHead += 1
        if waitingHead == waiting.count {
            waiting.removeAll(keepingCapacity: true)
            waitingHead = 0
        } else if waitingHead > 8192 {
            waiting.removeFirst(waitingHead)
            waitingHead = 0
        }
        return (confirms.register(publish), publish, resent)
    }

    /// `basic.ack` on the publisher channel.
    mutating func publishConfirmed(tag: UInt64, multiple: Bool) -> [PublishOutcome] {
        settle(tag: tag, multiple: multiple, PublishOutcome.confirmed)
    }

    /// `basic.nack` on the publisher channel.
    mutating func publishNacked(tag: UInt64, multiple: Bool) -> [PublishOutcome] {
        settle(tag: tag, multiple: multiple, PublishOutcome.nacked)
    }

    /// The publishes a confirm settles; a returned one ends as returned, whatever the confirm.
    private mutating func settle(tag: UInt64, multiple: Bool, _ outcome: (Publish) -> PublishOutcome) -> [PublishOutcome] {
        confirms.settle(tag: tag, multiple: multiple).map { tag, publish in
            if !returned.isEmpty, let error = returned.removeValue(forKey: tag) { return .returned(publish, error) }
            return outcome(publish)
        }
    }

    /// `basic.return`: the broker sends it before the confirm of the same publish, so it
    /// belongs to the oldest unconfirmed publish that `matches` (same message id) and is not
    /// marked yet.
    mutating func publishReturned(_ error: AMQPError, matching matches: (Publish) -> Bool) {
        var candidate = confirms.firstTag(where: matches)
        while let tag = candidate {
            if returned[tag] == nil {
                returned[tag] = error
                return
            }
            candidate = confirms.firstTag(after: tag, where: matches)
        }
    }

    // MARK: - Consumers and topologies

    mutating func consumerRegistered(id: UInt64, _ consumer: Consumer) {
        consumersByID[id] = consumer
    }

    @discardableResult
    mutating func consumerRemoved(id: UInt64) -> Consumer? {
        consumersByID.removeValue(forKey: id)
    }

    mutating func topologyDeclared(_ topology: AMQPTopology) {
        topologies.append(topology)
    }

    /// Forgets the queue and its bindings, or the next reconnect would bind a queue that no
    /// longer exists and fail.
    mutating func queueDeleted(_ queue: String) {
        for index in topologies.indices {
            topologies[index].queues.removeAll { $0.name == queue }
            topologies[index].bindings.removeAll { $0.queue == queue }
        }
    }

    mutating func exchangeUnbound(_ binding: AMQPTopology.ExchangeBinding) {
        for index in topologies.indices { topologies[index].exchangeBindings.removeAll { $0 == binding } }
    }

    mutating func exchangeDeleted(_ exchange: String) {
        for index in topologies.indices {
            topologies[index].exchanges.removeAll { $0.name == exchange }
            topologies[index].bindings.removeAll { $0.exchange == exchange }
            topologies[index].exchangeBindings.removeAll { $0.source == exchange || $0.destination == exchange }
        }
    }

    // MARK: - Private

    private var isDrained: Bool { confirms.count == 0 && !hasWaitingPublishes }

    private func nextBroker(after broker: Int) -> Int {
        (broker + 1) % settings.brokerCount
    }

    private func backoff(attempt: Int) -> Duration {
        settings.backoff.delay(attempt: attempt, random: settings.jitter())
    }

    private func orderedConsumers() -> [Consumer] {
        consumersByID.sorted { $0.key < $1.key }.map(\.value)
    }

    /// Unconfirmed publishes go out again first, in their original order.
    private mutating func requeueUnconfirmed() {
        returned.removeAll()
        oldestUnconfirmed = nil
        let unconfirmed = confirms.reset()
        resendCount += unconfirmed.count
        waiting = unconfirmed + waiting[waitingHead...]
        waitingHead = 0
    }

    private mutating func finish(_ farewell: Farewell, startupError: AMQPError? = nil) -> Action {
        let failing = confirms.reset() + waiting[waitingHead...]
        let consumers = orderedConsumers()
        confirms = ConfirmTracker()
        oldestUnconfirmed = nil
        returned.removeAll()
        waiting.removeAll()
        waitingHead = 0
        resendCount = 0
        consumersByID.removeAll()
        state = .closed
        return .finish(Finish(farewell: farewell, failing: failing, consumers: consumers, startupError: startupError))
    }
}

// MARK: - Equality, for tests

extension ConnectionStateMachine.Restore: Equatable where Publish: Equatable, Consumer: Equatable {}

extension ConnectionStateMachine.Reconnect: Equatable {
    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.broker == rhs.broker && lhs.after == rhs.after && lhs.dropping.map(ErrorIdentity.init) == rhs.dropping.map(ErrorIdentity.init)
    }
}

extension ConnectionStateMachine.Finish: Equatable where Publish: Equatable, Consumer: Equatable {
    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.farewell == rhs.farewell && lhs.failing == rhs.failing && lhs.consumers == rhs.consumers
            && lhs.startupError.map(ErrorIdentity.init) == rhs.startupError.map(ErrorIdentity.init)
    }
}

extension ConnectionStateMachine.Action: Equatable where Publish: Equatable, Consumer: Equatable {}

extension ConnectionStateMachine.PublishOutcome: Equatable where Publish: Equatable {
    static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.confirmed(let a), .confirmed(let b)), (.nacked(let a), .nacked(let b)): return a == b
        case (.returned(let a, let e), .returned(let b, let f)): return a == b && ErrorIdentity(e) == ErrorIdentity(f)
        default: return false
        }
    }
}

extension ConnectionStateMachine.State: Equatable {
    static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.idle, .idle), (.closed, .closed): return true
        case (.connecting(let a, let b), .connecting(let c, let d)): return a == c && b == d
        case (.open(let a), .open(let b)), (.blocked(let a), .blocked(let b)): return a == b
        case (.reconnecting(let a, let b, let e), .reconnecting(let c, let d, let f)):
            return a == c && b == d && ErrorIdentity(e) == ErrorIdentity(f)
        case (.closing(let a, let b, let e), .closing(let c, let d, let f)): return a == c && b == d && e == f
        default: return false
        }
    }
}

/// What makes two errors the same for the machine's tests: code, reply code and text.
private struct ErrorIdentity: Equatable {
    let code: AMQPError.Code
    let replyCode: AMQPReplyCode?
    let message: String

    init(_ error: AMQPError) {
        code = error.code
        replyCode = error.replyCode
        message = error.message
    }
}
