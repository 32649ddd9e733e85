import CRabbitMQ  // eventfd and poll only: rabbitmq-c is called through RabbitMQCConnection
import Foundation
import LivelineLogging
import Logging
import Synchronization

// Tests: Tests/LivelineAMQPTests/AMQPIntegrationTests.swift, Tests/LivelineAMQPTests/BrokerFailureTests.swift, Tests/LivelineAMQPTests/ConsumerCancelTests.swift

/// The owner thread of one AMQP connection: it carries out what ``ConnectionStateMachine``
/// decides, through ``RabbitMQCConnection`` (the C calls) and ``ContentAssembler`` (frames
/// into messages). Every rabbitmq-c call happens on this thread.
///
/// Other threads talk to it only through `mailbox` (a locked command list) and an eventfd
/// that wakes the thread when it sleeps in `poll`. Everything else on this class is touched
/// by the owner thread alone, which is why it is `@unchecked Sendable`.
final class ConnectionDriver: @unchecked Sendable, DeliverySettling {
    private struct Mailbox {
        var commands: [Command] = []
        var sleeping = false
        var state: AMQPConnectionState = .connecting
        var reconnects = 0
        var repliesReadAhead = 0
        var closeRequested = false
        var closeGrace: Duration = .seconds(5)
        var closeWaiters: [CheckedContinuation<Void, Never>] = []
        var finished = false
        /// Whether ``open()`` started the owner thread.
        var started = false
        /// How the first connection ended: up, or failed for good. Nil while it is tried.
        var firstConnection: Result<Void, AMQPError>?
        /// Who waits in ``opened()`` for the first connection, by waiter number.
        var openWaiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
        var nextOpenWaiter: UInt64 = 0
        var nextConsumerID: UInt64 = 1
        var blocked = false
    }

    private static let publisherChannel: UInt16 = 1
    private static let controlChannel: UInt16 = 2

    private let mailbox = Mutex(Mailbox())
    private let wakeFD: Int32
    let configuration: AMQPConfiguration
    private let logger: Logger

    typealias Machine = ConnectionStateMachine<ContinuousClock, PendingPublish, ConsumerRecord>

    // Owner-thread state.
    private let clock = ContinuousClock()
    /// Decides what happens to the connection; this class does the I/O it asks for.
    private var machine: Machine
    /// Whether the close request in the mailbox was handed to the machine.
    private var closeTaken = false
    /// The rabbitmq-c connection while one is up.
    private var connection: RabbitMQCConnection?
    private var generation: UInt64 = 0
    /// Frames of the publishes going out in one write; plain TCP only (see ``PublishFrames``).
    private var publishFrames: PublishFrames?
    private var consumerByChannel: [UInt16: UInt64] = [:]
    private var assembler = ContentAssembler()
    private var controlChannelOpen = false
    private var nextChannel: UInt16 = 3
    private var socketWritable = true
    /// Whether the socket may hold input not read yet, as far as polls and reads tell. A read
    /// that empties rabbitmq-c's buffer clears it and a poll that reports the socket sets it,
    /// so the turns of the loop after a read do not try the socket again: each try found
    /// nothing at a trickle, at the price of a `recv` that failed with EAGAIN and a `poll` with
    /// no timeout inside rabbitmq-c, about 18 system calls a batch of the translator's two
    /// connections at 1,000 events/s. Input that arrives meanwhile is not delayed: the next
    /// poll returns at once. ``readFrames()`` heeds it only when ``pollSeesAllInput``.
    private var socketMayHaveInput = true
    /// Whether a poll of the socket reports all the input not read yet. Not with TLS: OpenSSL
    /// may hold decrypted input that no poll sees, so every turn reads.
    private var pollSeesAllInput: Bool { configuration.tls == nil }
    private var broker: AMQPConfiguration.Broker { configuration.brokers[machine.broker] }

    init(configuration: AMQPConfiguration, logger: Logger) throws(AMQPError) {
        guard !configuration.brokers.isEmpty else { throw AMQPError(.invalidArgument, "no broker to connect to") }
        let fd = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        guard fd >= 0 else { throw AMQPError(.connectionFailed, "eventfd failed: errno \(errno)") }
        self.wakeFD = fd
        self.configuration = configuration
        var logger = logger
        logger[AMQPLogKey.connection] = "\(configuration.connectionName)"
        logger[AMQPLogKey.broker] = "\(configuration.brokers.map(\.description).joined(separator: ","))"
        self.logger = logger
        self.machine = Machine(settings: .init(configuration), now: clock.now)
    }

    deinit {
        close(wakeFD)
    }

    // MARK: - API for other threads

    var state: AMQPConnectionState { mailbox.withLock { $0.state } }
    var reconnectCount: Int { mailbox.withLock { $0.reconnects } }
    var repliesReadAhead: Int { mailbox.withLock { $0.repliesReadAhead } }
    var isBlocked: Bool { mailbox.withLock { $0.blocked } }

    func nextConsumerID() -> UInt64 {
        mailbox.withLock { box in
            defer { box.nextConsumerID += 1 }
            return box.nextConsumerID
        }
    }

    /// Starts the owner thread and returns once the first connection is up, or throws why it
    /// could not be (within ``AMQPConfiguration/firstConnectionPatience``). Commands given
    /// before wait in the mailbox for it.
    func open() async throws {
        let refusal: AMQPError? = mailbox.withLock { box in
            if box.started { return AMQPError(.invalidArgument, "the connection was opened already") }
            if box.finished { return AMQPError(.connectionClosed, "the connection was closed before it was opened") }
            box.started = true
            return nil
        }
        if let refusal { throw refusal }
        let thread = Thread { [self] in run() }
        thread.name = "amqp-\(configuration.connectionName)"
        thread.start()
        try await opened()
    }

    /// Returns once the first connection is up, or throws why it never will be. Cancelling
    /// ends the wait, not the connection.
    func opened() async throws {
        let waiter = mailbox.withLock { box in
            box.nextOpenWaiter += 1
            return box.nextOpenWaiter
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let known: Result<Void, any Error>? = mailbox.withLock { box in
                    if let outcome = box.firstConnection { return outcome.mapError { $0 as any Error } }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    box.openWaiters[waiter] = continuation
                    return nil
                }
                if let known { continuation.resume(with: known) }
            }
        } onCancel: {
            mailbox.withLock { $0.openWaiters.removeValue(forKey: waiter) }?.resume(throwing: CancellationError())
        }
    }

    /// Settles the first connection, once, for everyone who waits on it.
    private func settleFirstConnection(_ outcome: Result<Void, AMQPError>) {
        let waiters = mailbox.withLock { box -> [CheckedContinuation<Void, any Error>] in
            guard box.firstConnection == nil else { return [] }
            box.firstConnection = outcome
            defer { box.openWaiters.removeAll() }
            return Array(box.openWaiters.values)
        }
        for waiter in waiters { waiter.resume(with: outcome.mapError { $0 as any Error }) }
    }

    func enqueue(_ command: Command) {
        let accepted: Bool
        let wake: Bool
        (accepted, wake) = mailbox.withLock { box in
            guard !box.finished, !box.closeRequested else { return (false, false) }
            box.commands.append(command)
            let wake = box.sleeping
            box.sleeping = false
            return (true, wake)
        }
        if !accepted {
            Self.fail(command, with: AMQPError(.connectionClosed, "the connection is closed"))
            return
        }
        if wake { signal() }
    }

    /// Settlements never wake the owner thread: while deliveries are unsettled it polls at a
    /// short interval anyway (``PollPolicy``), so acks made within that interval go out as one
    /// `multiple` ack instead of one frame and one wake-up each.
    func settle(_ settlement: Settlement) {
        mailbox.withLock { box in
            // After close there is nothing to settle: the broker has requeued the delivery.
            guard !box.finished else { return }
            box.commands.append(.settle(settlement))
        }
    }

    /// Asks the owner thread to close, and resumes `continuation` once it has. A connection
    /// never opened has no owner thread: it closes here, failing what waited for it.
    func requestClose(grace: Duration, _ continuation: CheckedContinuation<Void, Never>?) {
        enum Next { case done, signal, closeUnopened([Command]) }
        let next = mailbox.withLock { box -> Next in
            if box.finished { return .done }
            box.closeRequested = true
            box.closeGrace = grace
            if let continuation { box.closeWaiters.append(continuation) }
            guard box.started else {
                box.finished = true
                box.state = .closed
                defer { box.commands.removeAll() }
                return .closeUnopened(box.commands)
            }
            return .signal
        }
        switch next {
        case .done: continuation?.resume()
        case .signal: signal()
        case .closeUnopened(let commands):
            let closed = AMQPError(.connectionClosed, "the connection was closed before it was opened")
            for command in commands { Self.fail(command, with: closed) }
            settleFirstConnection(.failure(closed))
            let waiters = mailbox.withLock { box in
                defer { box.closeWaiters.removeAll() }
                return box.closeWaiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    private func signal() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    /// Resets the eventfd that `signal()` made readable (owner thread).
    private func drainWake() {
        var value: UInt64 = 0
        _ = read(wakeFD, &value, 8)
    }

    private static func fail(_ command: Command, with error: AMQPError) {
        switch command {
        case .publish(let pending): pending.forEach { $0.completion.settle(index: $0.index, error: error) }
        case .settle: break
        case .declare(_, let continuation): continuation.resume(throwing: error)
        case .consume(let record, let continuation):
            record.deliveries.finish()
            continuation.resume(throwing: error)
        case .cancelConsumer(_, _, let continuation): continuation.resume()
        case .queueOperation(_, let continuation): continuation.resume(throwing: error)
        }
    }

    /// Shows the machine's state to other threads.
    private func publishState() {
        let (state, reconnects, blocked) = (machine.publicState, machine.reconnects, machine.isBlocked)
        mailbox.withLock { box in
            box.state = state
            box.reconnects = reconnects
            box.blocked = blocked
        }
    }

    // MARK: - Owner thread

    private func run() {
        carryOut(machine.start(now: clock.now))
        while !machine.isClosed {
            if !closeTaken, let grace = mailbox.withLock({ $0.closeRequested ? $0.closeGrace : nil }) {
                closeTaken = true
                carryOut(machine.closeRequested(grace: grace, now: clock.now))
                continue
            }
            do {
                try serviceOnce(closing: machine.isClosing)
            } catch {
                carryOut(machine.connectionLost(error, now: clock.now))
                continue
            }
            carryOut(machine.tick(now: clock.now))
        }
    }

    /// Runs the I/O an action asks for, reporting each outcome back to the machine, until the
    /// machine wants nothing more.
    private func carryOut(_ first: Machine.Action) {
        var action = first
        while true {
            switch action {
            case .none:
                return
            case .connect(let index):
                let target = configuration.brokers[index]
                do {
                    try establish(target)
                    action = machine.connectionEstablished(now: clock.now)
                } catch {
                    action = machine.connectFailed(error, now: clock.now)
                    logConnectFailure(error, broker: target, next: action)
                }
            case .restore(let restore):
                let attempts: Int
                if case .reconnecting(_, let attempt, _) = machine.state { attempts = attempt + 1 } else { attempts = 1 }
                do {
                    for topology in restore.topologies { try declareOnWire(topology) }
                    for record in restore.consumers where record.active { try subscribe(record) }
                } catch {
                    let target = broker
                    dropConnection()
                    action = machine.connectFailed(error, now: clock.now)
                    logConnectFailure(error, broker: target, next: action)
                    continue
                }
                action = machine.restored(now: clock.now)
                publishState()
                if restore.reconnected {
                    logger.info(
                        "AMQP reconnected",
                        metadata: AMQPLogKey.metadata([.attempts: "\(attempts)", .connectedTo: "\(broker)"]))
                } else {
                    logger.info("AMQP connected", metadata: AMQPLogKey.metadata([.connectedTo: "\(broker)"]))
                    settleFirstConnection(.success(()))
                }
            case .reconnect(let plan):
                if let error = plan.dropping {
                    logger.warning("AMQP connection lost; reconnecting", metadata: AMQPLogKey.metadata([.error: "\(error)"]))
                    dropConnection()
                }
                publishState()
                if waitInterruptibly(plan.after) {
                    action = machine.backoffElapsed(now: clock.now)
                } else {
                    closeTaken = true
                    let grace = mailbox.withLock { $0.closeGrace }
                    action = machine.closeRequested(grace: grace, now: clock.now)
                }
            case .sendHeartbeat:
                do {
                    try sendHeartbeat()
                    action = .none
                } catch {
                    action = machine.connectionLost(error, now: clock.now)
                }
            case .finish(let finish):
                finishConnection(finish)
                return
            }
        }
    }

    private func logConnectFailure(_ error: AMQPError, broker: AMQPConfiguration.Broker, next: Machine.Action) {
        switch next {
        case .connect:
            logger.warning(
                "AMQP broker unreachable; trying the next",
                metadata: AMQPLogKey.metadata([.connectedTo: "\(broker)", .error: "\(error)"]))
        case .reconnect(let plan):
            switch machine.state {
            case .reconnecting(_, let attempt, _):
                logger.warning(
                    "AMQP reconnect failed",
                    metadata: AMQPLogKey.metadata([.attempt: "\(attempt)", .connectedTo: "\(broker)", .error: "\(error)"]))
            case .connecting:
                // The first connection, waiting for a broker that is not up yet.
                logger.warning(
                    "AMQP broker unreachable; retrying",
                    metadata: AMQPLogKey.metadata([.connectedTo: "\(broker)", .retryIn: "\(plan.after)", .error: "\(error)"]))
            default:
                break
            }
        default:
            break  // the first connection failed on every broker: finishConnection logs it
        }
    }

    /// One turn of the loop: run commands, send, read, and sleep when there is nothing to do.
    private func serviceOnce(closing: Bool) throws(AMQPError) {
        let commands = mailbox.withLock { box -> [Command] in
            let taken = box.commands
            box.commands.removeAll(keepingCapacity: true)
            return taken
        }
        for command in commands {
            try execute(command)
        }
        for record in machine.consumers where record.coalescer.hasPending {
            try flushAcks(record, force: false)
        }
        try sendWaitingPublishes()
        let readsHeld = !closing && holdsTooMuch
        if readsHeld {
            // Not reading, the thread cannot hear the broker: the silence is its own.
            machine.inboundActivity(now: clock.now)
        }
        let framesRead = readsHeld ? 0 : try readFrames()
        let now = clock.now
        for record in machine.consumers { record.deliveries.tick(now: now) }
        if let connection, !connection.hasQueuedFrames {
            for record in machine.consumers where record.finishPending {
                record.finishPending = false
                record.deliveries.finish()
            }
        }
        connection?.releaseBuffers()

        if commands.isEmpty && framesRead == 0 && !(machine.canPublish && socketWritable) {
            sleep(wantWritable: machine.hasWaitingPublishes && !socketWritable, closing: closing, readsHeld: readsHeld)
        }
    }

    /// Whether the consumers hold more delivered bytes than ``AMQPConfiguration/maximumHeldBytes``:
    /// then nothing is read until their settlements bring it under, and what the broker sends
    /// meanwhile waits in the socket's buffers, outside the process.
    private var holdsTooMuch: Bool {
        guard let maximum = configuration.maximumHeldBytes else { return false }
        return machine.consumers.reduce(0) { $0 + $1.held.total } > maximum
    }

    private var hasUnsettledDeliveries: Bool {
        machine.consumers.contains { $0.channel != 0 && $0.lastDeliveredTag >= $0.coalescer.settledBelow }
    }

    private func sleep(wantWritable: Bool, closing: Bool, readsHeld: Bool) {
        let mayBlock = mailbox.withLock { box -> Bool in
            guard box.commands.isEmpty, !box.closeRequested || closing else { return false }
            box.sleeping = true
            return true
        }
        // No poll, so nothing is known of the socket.
        socketMayHaveInput = true
        guard mayBlock else { return }
        guard let connection else { return }
        if connection.hasBufferedInput && !readsHeld {
            mailbox.withLock { $0.sleeping = false }
            return
        }
        var fds = [
            pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0),
            pollfd(fd: connection.socket, events: Int16(POLLIN) | (wantWritable ? Int16(POLLOUT) : 0), revents: 0),
        ]
        let policy = PollPolicy.decide(
            heartbeat: configuration.heartbeat, closing: closing, unsettledDeliveries: hasUnsettledDeliveries,
            publishesAwaitBroker: machine.unconfirmedCount > 0 || machine.hasWaitingPublishes,
            consumers: machine.consumers.map(\.deliveries.lingerWait), readsHeld: readsHeld, now: clock.now)
        _ = poll(&fds, policy.watchesSocket ? 2 : 1, policy.timeout)
        mailbox.withLock { $0.sleeping = false }
        // Any event on the socket (input, a hang-up, an error) is found by reading it.
        socketMayHaveInput = !policy.watchesSocket || fds[1].revents != 0
        if fds[0].revents & Int16(POLLIN) != 0 { drainWake() }
        if fds[1].revents & Int16(POLLIN) != 0 { machine.inboundActivity(now: clock.now) }
        if fds[1].revents & Int16(POLLOUT) != 0 { socketWritable = true }
    }

    private func sendHeartbeat() throws(AMQPError) {
        guard let connection else { return }
        // A broker that reads nothing needs no heartbeat, and a blocking send would stall the
        // thread that is to notice its silence.
        guard Self.isWritable(connection.socket) else { return }
        try connection.sendHeartbeat()
    }

    private static func isWritable(_ socket: Int32) -> Bool {
        var probe = pollfd(fd: socket, events: Int16(POLLOUT), revents: 0)
        _ = poll(&probe, 1, 0)
        return probe.revents & Int16(POLLOUT) != 0
    }

    // MARK: Connecting

    /// Opens a connection to `broker`: socket, login, publisher channel in confirm mode and
    /// the control channel.
    private func establish(_ broker: AMQPConfiguration.Broker) throws(AMQPError) {
        do {
            let connection = try RabbitMQCConnection.open(to: broker, configuration: configuration)
            if configuration.maximumHeldBytes != nil {
                // What the broker sends while reads are held waits in this buffer; a broker RPC
                // on the connection (a queue inspection) reads all of it into rabbitmq-c's own
                // memory on its way to the reply, so it must stay small.
                var size: Int32 = 256 * 1024
                setsockopt(connection.socket, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            }
            self.connection = connection
            try connection.openChannel(Self.publisherChannel)
            try connection.selectConfirms(on: Self.publisherChannel)
            try openControlChannel()
            generation += 1
            nextChannel = 3
            socketWritable = true
            socketMayHaveInput = true
        } catch {
            dropConnection()
            throw error
        }
    }

    private func openControlChannel() throws(AMQPError) {
        guard !controlChannelOpen, let connection else { return }
        try connection.openChannel(Self.controlChannel)
        controlChannelOpen = true
    }

    /// Runs an operation on the control channel, which the broker closes when the operation
    /// is refused (it is reopened for the next one).
    private func onControlChannel<Result>(
        _ body: (RabbitMQCConnection, UInt16) throws(AMQPError) -> Result
    ) throws(AMQPError) -> Result {
        guard let connection else { throw AMQPError(.connectionLost, "not connected") }
        try openControlChannel()
        do {
            let result = try body(connection, Self.controlChannel)
            if connection.hasQueuedFrames { mailbox.withLock { $0.repliesReadAhead += 1 } }
            // The reply came from the broker, and rabbitmq-c may have read heartbeats off the
            // socket while it waited for it, which the poll below would then never see: on a
            // connection that receives nothing else (a consumer whose work is blocked), the
            // broker would seem silent and the connection be dropped.
            machine.inboundActivity(now: clock.now)
            return result
        } catch {
            if error.code == .channelClosed {
                // A refusal is a reply too.
                controlChannelOpen = false
                machine.inboundActivity(now: clock.now)
            }
            throw error
        }
    }

    /// Sleeps for `delay` unless close is requested first (returns false then).
    private func waitInterruptibly(_ delay: Duration) -> Bool {
        let deadline = ContinuousClock.now + delay
        while ContinuousClock.now < deadline {
            if mailbox.withLock({ $0.closeRequested }) { return false }
            var fds = [pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
            let remaining = Int32(max(1, min(100, (deadline - .now).seconds * 1000)))
            _ = poll(&fds, 1, remaining)
            if fds[0].revents & Int16(POLLIN) != 0 { drainWake() }
            let now = clock.now
            for record in machine.consumers { record.deliveries.tick(now: now) }
        }
        return !mailbox.withLock { $0.closeRequested }
    }

    /// Frees a broken connection and forgets everything tied to it; the machine keeps what
    /// must survive (unconfirmed publishes, consumers, topologies).
    private func dropConnection() {
        connection = nil
        publishFrames = nil
        controlChannelOpen = false
        assembler.reset()
        consumerByChannel.removeAll()
        for record in machine.consumers {
            record.coalescer = AckCoalescer()
            record.lastDeliveredTag = 0
            record.held = HeldBytes()
            record.channel = 0
        }
    }

    /// Closes for good: every waiter is answered, every consumer sequence ends.
    private func finishConnection(_ finish: Machine.Finish) {
        if let connection, finish.farewell == .close {
            // Acks made just before close() may still be in the mailbox: send them, or the
            // broker would redeliver work that was done.
            let pending = mailbox.withLock { box -> [Settlement] in
                var settlements: [Settlement] = []
                box.commands.removeAll { command in
                    guard case .settle(let settlement) = command else { return false }
                    settlements.append(settlement)
                    return true
                }
                return settlements
            }
            for settlement in pending { try? apply(settlement, consumers: finish.consumers) }
            for record in finish.consumers where record.coalescer.hasPending { try? flushAcks(record) }
            connection.close()
        }
        dropConnection()
        // What waited for the connection fails with the first connection's error, when that
        // is why it ends, so a service that queued its declares before the broker was up says why.
        let failure: AMQPError
        if let error = finish.startupError {
            logger.warning("AMQP connect failed", metadata: AMQPLogKey.metadata([.error: "\(error)"]))
            failure = error
        } else {
            failure = AMQPError(.connectionClosed, "the connection was closed before the broker confirmed")
        }
        for pending in finish.failing { pending.completion.settle(index: pending.index, error: failure) }
        for record in finish.consumers { record.deliveries.finish() }
        let (commands, waiters) = mailbox.withLock { box in
            box.finished = true
            box.state = .closed
            box.blocked = false
            defer {
                box.commands.removeAll()
                box.closeWaiters.removeAll()
            }
            return (box.commands, box.closeWaiters)
        }
        for command in commands { Self.fail(command, with: failure) }
        settleFirstConnection(.failure(finish.startupError ?? AMQPError(.connectionClosed, "the connection was closed before it was up")))
        if finish.startupError == nil { logger.info("AMQP connection closed") }
        for waiter in waiters { waiter.resume() }
    }

    // MARK: Commands

    private func execute(_ command: Command) throws(AMQPError) {
        switch command {
        case .publish(let pending):
            machine.enqueue(pending)
        case .settle(let settlement):
            try apply(settlement)
        case .declare(let topology, let continuation):
            do {
                try declareOnWire(topology)
                machine.topologyDeclared(topology)
                continuation.resume()
            } catch {
                continuation.resume(throwing: error)
                if error.isConnectionLevel { throw error }
            }
        case .consume(let record, let continuation):
            do {
                try subscribe(record)
                machine.consumerRegistered(id: record.id, record)
                continuation.resume()
            } catch {
                record.deliveries.finish(throwing: error)
                continuation.resume(throwing: error)
                if error.isConnectionLevel { throw error }
            }
        case .cancelConsumer(let id, let closeChannel, let continuation):
            defer { continuation.resume() }
            guard let record = machine.consumer(id: id) else { return }
            try cancel(record, closeChannel: closeChannel)
        case .queueOperation(let operation, let continuation):
            do {
                continuation.resume(returning: try perform(operation))
            } catch {
                continuation.resume(throwing: error)
                if error.isConnectionLevel { throw error }
            }
        }
    }

    private func declareOnWire(_ topology: AMQPTopology) throws(AMQPError) {
        try onControlChannel { connection, channel throws(AMQPError) in
            for exchange in topology.exchanges { try connection.declare(exchange, on: channel) }
            for queue in topology.queues { try connection.declare(queue, on: channel) }
            for binding in topology.bindings { try connection.bind(binding, on: channel) }
            for binding in topology.exchangeBindings { try connection.bind(binding, on: channel) }
        }
    }

    private func perform(_ operation: QueueOperation) throws(AMQPError) -> Int {
        try onControlChannel { connection, channel throws(AMQPError) in
            switch operation {
            case .count(let queue):
                return try connection.inspect(queue: queue, on: channel).messages
            case .consumers(let queue):
                return try connection.inspect(queue: queue, on: channel).consumers
            case .claim(let queue):
                do throws(AMQPError) {
                    try connection.declareExclusive(queue: queue, on: channel)
                    return 1
                } catch where error.code == .channelClosed && error.replyCode == .resourceLocked {
                    // Held by another connection; the control channel reopens on next use.
                    controlChannelOpen = false
                    return 0
                }
            case .unbindExchange(let binding):
                try connection.unbind(binding, on: channel)
                machine.exchangeUnbound(binding)
                return 0
            case .purge(let queue):
                return try connection.purge(queue: queue, on: channel)
            case .deleteQueue(let queue):
                let count = try connection.delete(queue: queue, on: channel)
                machine.queueDeleted(queue)
                return count
            case .deleteExchange(let exchange):
                try connection.delete(exchange: exchange, on: channel)
                machine.exchangeDeleted(exchange)
                return 0
            }
        }
    }

    private func subscribe(_ record: ConsumerRecord) throws(AMQPError) {
        guard let connection else { throw AMQPError(.connectionLost, "not connected") }
        let channel = nextChannel
        nextChannel += 1
        try connection.openChannel(channel)
        try connection.setPrefetch(record.prefetch, on: channel)
        try connection.consume(queue: record.queue, tag: record.tag, on: channel)
        record.channel = channel
        record.coalescer = AckCoalescer()
        record.lastDeliveredTag = 0
        record.held = HeldBytes()
        consumerByChannel[channel] = record.id
    }

    private func cancel(_ record: ConsumerRecord, closeChannel: Bool) throws(AMQPError) {
        record.active = false
        guard let connection, record.channel != 0 else {
            machine.consumerRemoved(id: record.id)
            record.deliveries.finish()
            return
        }
        do throws(AMQPError) {
            if closeChannel {
                machine.consumerRemoved(id: record.id)
                consumerByChannel[record.channel] = nil
                try flushAcks(record)
                try connection.closeChannel(record.channel)
                record.deliveries.finish()
            } else {
                try connection.cancel(consumerTag: record.tag, on: record.channel)
                // Deliveries that arrived before cancel-ok may still sit in rabbitmq-c's frame
                // queue; the sequence ends once they are handed over.
                record.finishPending = true
            }
        } catch {
            // The connection went with the cancel (a broker cut off answers no cancel-ok), and
            // the consumer with it: the broker requeues what it held. Its sequence ends now,
            // or the work reading it would wait for ever, since an inactive consumer is not
            // subscribed again after the reconnect.
            machine.consumerRemoved(id: record.id)
            consumerByChannel[record.channel] = nil
            record.deliveries.finish()
            throw error
        }
    }

    private func apply(_ settlement: Settlement, consumers: [ConsumerRecord]? = nil) throws(AMQPError) {
        guard let connection, settlement.generation == generation,
            let id = consumerByChannel[settlement.channel],
            let record = consumers?.first(where: { $0.id == id }) ?? machine.consumer(id: id)
        else { return }  // from before a reconnect: the broker requeued it already
        let tag = settlement.tag
        let channel = settlement.channel
        if configuration.maximumHeldBytes != nil {
            switch settlement.kind {
            case .ack(let multiple), .nack(_, let multiple): record.held.settled(tag, multiple: multiple)
            case .reject: record.held.settled(tag, multiple: false)
            }
        }
        switch settlement.kind {
        case .ack(multiple: false):
            record.coalescer.ack(tag)
            return
        case .ack(multiple: true):
            try flushAcks(record)
            try connection.ack(tag, multiple: true, on: channel)
            record.coalescer.settledDirectly(tag, multiple: true)
        case .nack(let requeue, let multiple):
            try flushAcks(record)
            try connection.nack(tag, multiple: multiple, requeue: requeue, on: channel)
            record.coalescer.settledDirectly(tag, multiple: multiple)
        case .reject(let requeue):
            try flushAcks(record)
            try connection.reject(tag, requeue: requeue, on: channel)
            record.coalescer.settledDirectly(tag, multiple: false)
        }
    }

    private func flushAcks(_ record: ConsumerRecord, force: Bool = true) throws(AMQPError) {
        guard let connection, record.channel != 0 else { return }
        for frame in record.coalescer.flush(force: force) {
            guard case .ack(let tag, let multiple) = frame else { continue }
            try connection.ack(tag, multiple: multiple, on: record.channel)
        }
    }

    // MARK: Publishing

    private func sendWaitingPublishes() throws(AMQPError) {
        guard let connection, machine.canPublish else { return }
        // A frozen broker stops reading; never block inside a send that heartbeats can't
        // interrupt. Only write while the socket has room.
        socketWritable = Self.isWritable(connection.socket)
        guard socketWritable else { return }
        var budget = 256 * 1024
        let frames = configuration.tls == nil ? framesBuffer(connection) : nil
        while budget > 0, let (_, pending, resent) = machine.nextPublish() {
            budget -= pending.message.body.count + 256
            var message = pending.message
            if resent { message.properties.headers[AMQPMessage.resentHeader] = .bool(true) }
            try connection.publish(message, on: Self.publisherChannel, into: frames)
        }
        if let frames, !frames.isEmpty {
            try frames.send(to: connection.socket, timeout: sendTimeout)
        }
    }

    private func framesBuffer(_ connection: RabbitMQCConnection) -> PublishFrames {
        if let publishFrames { return publishFrames }
        let frames = PublishFrames(frameMax: connection.frameMax)
        publishFrames = frames
        return frames
    }

    /// How long a send may wait for socket room: as long as a silent broker is tolerated.
    private var sendTimeout: Duration {
        configuration.heartbeat > .zero ? configuration.heartbeat * 2 : .seconds(30)
    }

    // MARK: Reading

    /// Reads and handles the frames already available, without blocking.
    private func readFrames() throws(AMQPError) -> Int {
        guard let connection, socketMayHaveInput || !pollSeesAllInput || connection.hasBufferedInput else { return 0 }
        var count = 0
        while count < 1024, let frame = try connection.nextFrame() {
            count += 1
            try handle(frame)
            if configuration.maximumHeldBytes != nil, holdsTooMuch { break }
            // Emptied what the last `recv` brought: the next poll tells whether there is more.
            if pollSeesAllInput, !connection.hasBufferedInput { break }
        }
        socketMayHaveInput = count == 1024
        if count > 0 { machine.inboundActivity(now: clock.now) }
        return count
    }

    private func handle(_ frame: RabbitMQCConnection.Frame) throws(AMQPError) {
        switch frame {
        case .deliver(let channel, let tag, let redelivered, let exchange, let routingKey):
            guard let id = consumerByChannel[channel] else { return }
            assembler.begin(
                .delivery(consumer: id, tag: tag, redelivered: redelivered, exchange: exchange, routingKey: routingKey),
                channel: channel)
        case .returned(let channel, let error):
            assembler.begin(.returned(error), channel: channel)
        case .header(let channel, let properties, let bodySize):
            if let content = assembler.header(channel: channel, properties: properties, bodySize: bodySize) {
                complete(content)
            }
        case .body(let channel, let fragment):
            if let content = assembler.body(channel: channel, fragment) { complete(content) }
        case .ack(let channel, let tag, let multiple) where channel == Self.publisherChannel:
            for outcome in machine.publishConfirmed(tag: tag, multiple: multiple) { settle(outcome) }
        case .nack(let channel, let tag, let multiple) where channel == Self.publisherChannel:
            for outcome in machine.publishNacked(tag: tag, multiple: multiple) { settle(outcome) }
        case .consumerCancelled(let channel):
            guard let id = consumerByChannel[channel], let record = machine.consumer(id: id) else { return }
            record.active = false
            machine.consumerRemoved(id: id)
            logger.warning("AMQP broker cancelled a consumer", metadata: AMQPLogKey.metadata([.queue: "\(record.queue)"]))
            record.deliveries.finish(
                throwing: AMQPError(
                    .consumerCancelled, "the broker cancelled the consumer of queue \(record.queue) (deleted or moved)"))
        case .blocked:
            machine.brokerBlocked()
            publishState()
            logger.warning("AMQP broker blocked publishing (resource alarm); publishes wait")
        case .unblocked:
            machine.brokerUnblocked()
            publishState()
            logger.info("AMQP broker unblocked publishing")
        case .connectionClosed(let error):
            throw error
        case .channelClosed(let channel, let error):
            if channel == Self.controlChannel {
                controlChannelOpen = false
                return
            }
            // A publisher or consumer channel died under us: rebuild the connection so every
            // piece of state is consistent again.
            throw AMQPError(.connectionLost, replyCode: error.replyCode, "channel \(channel) closed: \(error.message)")
        case .ack, .nack, .other:
            break
        }
    }

    private func complete(_ content: ContentAssembler.Content) {
        switch content.kind {
        case .delivery(let consumerID, let tag, let redelivered, let exchange, let routingKey):
            guard let record = machine.consumer(id: consumerID) else { return }
            let delivery = AMQPDelivery(
                body: content.body, properties: content.properties ?? AMQPProperties(persistent: false),
                exchange: exchange, routingKey: routingKey, redelivered: redelivered, deliveryTag: tag,
                queue: record.queue, channel: content.channel, generation: generation, settler: self)
            record.lastDeliveredTag = tag
            if configuration.maximumHeldBytes != nil { record.held.delivered(tag, bytes: content.body.count) }
            record.deliveries.yield(delivery)
        case .returned(let error):
            // The broker sends basic.return before the confirm of the same publish; match it by
            // message id to the oldest unconfirmed publish not yet marked.
            let messageID = content.properties?.messageID
            machine.publishReturned(error) { $0.message.properties.messageID == messageID }
        }
    }

    private func settle(_ outcome: Machine.PublishOutcome) {
        switch outcome {
        case .confirmed(let pending):
            pending.completion.settle(index: pending.index, error: nil)
        case .returned(let pending, let error):
            pending.completion.settle(index: pending.index, error: error)
        case .nacked(let pending):
            pending.completion.settle(
                index: pending.index,
                error: AMQPError(
                    .publishNacked,
                    "the broker refused the message for \(pending.message.exchange)/\(pending.message.routingKey) (queue full or unavailable)"
                ))
        }
    }
}

extension AMQPError {
    /// Whether the whole connection is unusable (rather than one channel).
    var isConnectionLevel: Bool {
        [.connectionLost, .serverClosed, .heartbeatTimeout, .connectionFailed].contains(code)
    }
}
