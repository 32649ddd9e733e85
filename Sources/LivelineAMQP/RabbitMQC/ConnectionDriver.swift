import CRabbitMQ
import Foundation
import LivelineLogging
import Logging
import Synchronization

/// The owner thread of one AMQP connection: every rabbitmq-c call happens here.
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
        var closeRequested = false
        var closeGrace: Duration = .seconds(5)
        var closeWaiters: [CheckedContinuation<Void, Never>] = []
        var finished = false
        var startup: CheckedContinuation<Void, Error>?
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
    private var connection: amqp_connection_state_t?
    private var generation: UInt64 = 0
    private let arena = CArena()
    /// Frames of the publishes going out in one write; plain TCP only (see ``PublishFrames``).
    private var publishFrames: PublishFrames?
    private var consumerByChannel: [UInt16: UInt64] = [:]
    private var assembling: [UInt16: ContentAssembly] = [:]
    private var controlChannelOpen = false
    private var nextChannel: UInt16 = 3
    private var socketWritable = true
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
    var isBlocked: Bool { mailbox.withLock { $0.blocked } }

    func nextConsumerID() -> UInt64 {
        mailbox.withLock { box in
            defer { box.nextConsumerID += 1 }
            return box.nextConsumerID
        }
    }

    /// Starts the owner thread and returns once the first connection is up.
    func start() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            mailbox.withLock { $0.startup = continuation }
            let thread = Thread { [self] in run() }
            thread.name = "amqp-\(configuration.connectionName)"
            thread.start()
        }
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
    /// short interval anyway (see `sleep`), so acks made within that interval go out as one
    /// `multiple` ack instead of one frame and one wake-up each.
    func settle(_ settlement: Settlement) {
        mailbox.withLock { box in
            // After close there is nothing to settle: the broker has requeued the delivery.
            guard !box.finished else { return }
            box.commands.append(.settle(settlement))
        }
    }

    func requestClose(grace: Duration, _ continuation: CheckedContinuation<Void, Never>) {
        let alreadyFinished = mailbox.withLock { box in
            if box.finished { return true }
            box.closeRequested = true
            box.closeGrace = grace
            box.closeWaiters.append(continuation)
            return false
        }
        if alreadyFinished { continuation.resume() } else { signal() }
    }

    private func signal() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
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
        perform(machine.start(now: clock.now))
        while !machine.isClosed {
            if !closeTaken, let grace = mailbox.withLock({ $0.closeRequested ? $0.closeGrace : nil }) {
                closeTaken = true
                perform(machine.closeRequested(grace: grace, now: clock.now))
                continue
            }
            do {
                try serviceOnce(closing: machine.isClosing)
            } catch {
                perform(machine.connectionLost(error, now: clock.now))
                continue
            }
            perform(machine.tick(now: clock.now))
        }
    }

    /// Runs the I/O an action asks for, reporting each outcome back to the machine, until the
    /// machine wants nothing more.
    private func perform(_ first: Machine.Action) {
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
                    mailbox.withLock { $0.startup.take() }?.resume()
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
        case .reconnect:
            guard case .reconnecting(_, let attempt, _) = machine.state else { return }
            logger.warning(
                "AMQP reconnect failed",
                metadata: AMQPLogKey.metadata([.attempt: "\(attempt)", .connectedTo: "\(broker)", .error: "\(error)"]))
        default:
            logger.warning("AMQP connect failed", metadata: AMQPLogKey.metadata([.error: "\(error)"]))
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
        let framesRead = try readFrames()
        for record in machine.consumers where record.finishPending && amqp_frames_enqueued(connection) == 0 {
            record.finishPending = false
            record.deliveries.finish()
        }
        amqp_maybe_release_buffers(connection)

        if commands.isEmpty && framesRead == 0 && !(machine.canPublish && socketWritable) {
            sleep(wantWritable: machine.hasWaitingPublishes && !socketWritable, closing: closing)
        }
    }

    private var hasUnsettledDeliveries: Bool {
        machine.consumers.contains { $0.channel != 0 && $0.lastDeliveredTag >= $0.coalescer.settledBelow }
    }

    private func sleep(wantWritable: Bool, closing: Bool) {
        let mayBlock = mailbox.withLock { box -> Bool in
            guard box.commands.isEmpty, !box.closeRequested || closing else { return false }
            box.sleeping = true
            return true
        }
        guard mayBlock else { return }
        guard let connection else { return }
        if amqp_data_in_buffer(connection) != 0 || amqp_frames_enqueued(connection) != 0 {
            mailbox.withLock { $0.sleeping = false }
            return
        }
        let socket = amqp_get_sockfd(connection)
        var fds = [
            pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0),
            pollfd(fd: socket, events: Int16(POLLIN) | (wantWritable ? Int16(POLLOUT) : 0), revents: 0),
        ]
        // Wake often enough to send heartbeats and to notice a silent broker.
        let heartbeatMS = Int32(configuration.heartbeat.seconds * 1000)
        let idle = heartbeatMS > 0 ? min(1000, max(50, heartbeatMS / 4)) : 1000
        let timeout: Int32 = closing ? 50 : (hasUnsettledDeliveries ? 2 : idle)
        _ = poll(&fds, 2, timeout)
        mailbox.withLock { $0.sleeping = false }
        if fds[0].revents & Int16(POLLIN) != 0 {
            var value: UInt64 = 0
            _ = read(wakeFD, &value, 8)
        }
        if fds[1].revents & Int16(POLLIN) != 0 { machine.inboundActivity(now: clock.now) }
        if fds[1].revents & Int16(POLLOUT) != 0 { socketWritable = true }
    }

    private func sendHeartbeat() throws(AMQPError) {
        guard let connection else { return }
        // A broker that reads nothing needs no heartbeat, and a blocking send would stall the
        // thread that is to notice its silence.
        var probe = pollfd(fd: amqp_get_sockfd(connection), events: Int16(POLLOUT), revents: 0)
        guard poll(&probe, 1, 0) > 0, probe.revents & Int16(POLLOUT) != 0 else { return }
        var frame = amqp_frame_t()
        frame.frame_type = UInt8(AMQP_FRAME_HEARTBEAT)
        frame.channel = 0
        try checkStatus(amqp_send_frame(connection, &frame))
    }

    // MARK: Connecting

    /// Opens a connection to `broker`: socket, login, publisher channel in confirm mode and
    /// the control channel.
    private func establish(_ broker: AMQPConfiguration.Broker) throws(AMQPError) {
        guard let connection = amqp_new_connection() else {
            throw AMQPError(.connectionFailed, "rabbitmq-c could not allocate a connection")
        }
        self.connection = connection
        do {
            try openSocket(connection, broker)
            try login(connection)
            amqp_channel_open(connection, Self.publisherChannel)
            try check(reply: amqp_get_rpc_reply(connection), channel: Self.publisherChannel, "channel.open")
            amqp_confirm_select(connection, Self.publisherChannel)
            try check(reply: amqp_get_rpc_reply(connection), channel: Self.publisherChannel, "confirm.select")
            try openControlChannel()
            generation += 1
            nextChannel = 3
            socketWritable = true
        } catch {
            dropConnection()
            throw error
        }
    }

    private func openSocket(_ connection: amqp_connection_state_t, _ broker: AMQPConfiguration.Broker) throws(AMQPError) {
        let socket: OpaquePointer?
        if let tls = configuration.tls {
            socket = amqp_ssl_socket_new(connection)
            guard let socket else { throw AMQPError(.tlsFailed, "could not create a TLS socket") }
            guard amqp_ssl_socket_set_ssl_versions(socket, AMQP_TLSv1_2, AMQP_TLSvLATEST) == 0 else {
                throw AMQPError(.tlsFailed, "TLS 1.2 or newer is not available")
            }
            // rabbitmq-c 0.11 has no default trust store, so fall back to the system bundle.
            let caFile = tls.caFile ?? "/etc/ssl/certs/ca-certificates.crt"
            if tls.verifyPeer {
                let status = amqp_ssl_socket_set_cacert(socket, caFile)
                guard status == 0 else {
                    throw AMQPError(.tlsFailed, "cannot load CA file \(caFile): \(Self.describe(status))")
                }
            }
            if let certificate = tls.certificateFile, let key = tls.keyFile {
                let status = amqp_ssl_socket_set_key(socket, certificate, key)
                guard status == 0 else {
                    throw AMQPError(.tlsFailed, "cannot load client certificate \(certificate): \(Self.describe(status))")
                }
            }
            amqp_ssl_socket_set_verify_peer(socket, tls.verifyPeer ? 1 : 0)
            amqp_ssl_socket_set_verify_hostname(socket, tls.verifyHostname ? 1 : 0)
        } else {
            socket = amqp_tcp_socket_new(connection)
        }
        guard let socket else { throw AMQPError(.connectionFailed, "could not create a socket") }
        var timeout = Self.cTimeval(configuration.connectTimeout)
        let status = amqp_socket_open_noblock(socket, broker.host, Int32(broker.port), &timeout)
        guard status == 0 else {
            let isTLS = status <= AMQP_STATUS_SSL_ERROR.rawValue && status > _AMQP_STATUS_SSL_NEXT_VALUE.rawValue
            throw AMQPError(
                isTLS ? .tlsFailed : .connectionFailed,
                "cannot reach \(broker): \(Self.describe(status))")
        }
        amqp_set_handshake_timeout(connection, &timeout)
        amqp_set_rpc_timeout(connection, &timeout)
    }

    private func login(_ connection: amqp_connection_state_t) throws(AMQPError) {
        arena.reset()
        defer { arena.reset() }
        var properties = arena.table([
            "connection_name": .string(configuration.connectionName),
            "product": "Liveline",
            "capabilities": .table([
                "publisher_confirms": true,
                "basic.nack": true,
                "consumer_cancel_notify": true,
                "connection.blocked": true,
                "authentication_failure_close": true,
            ]),
        ])
        let reply = liveline_amqp_login(
            connection, configuration.virtualHost, 0, 131_072, Int32(configuration.heartbeat.seconds.rounded()),
            &properties, configuration.username, configuration.password)
        // A broker that does not honour authentication_failure_close refuses credentials by
        // closing the socket; a timeout is not a refusal and stays retriable.
        let closedOnLogin =
            reply.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION
            && reply.library_error == AMQP_STATUS_CONNECTION_CLOSED.rawValue
        do {
            try check(reply: reply, channel: 0, "login")
        } catch {
            if error.replyCode == .accessRefused || closedOnLogin {
                throw AMQPError(
                    .authenticationFailed, replyCode: error.replyCode,
                    "the broker refused user \(configuration.username) on vhost \(configuration.virtualHost): \(error.message)")
            }
            throw error
        }
    }

    private func openControlChannel() throws(AMQPError) {
        guard !controlChannelOpen, let connection else { return }
        amqp_channel_open(connection, Self.controlChannel)
        try check(reply: amqp_get_rpc_reply(connection), channel: Self.controlChannel, "channel.open")
        controlChannelOpen = true
    }

    /// Sleeps for `delay` unless close is requested first (returns false then).
    private func waitInterruptibly(_ delay: Duration) -> Bool {
        let deadline = ContinuousClock.now + delay
        while ContinuousClock.now < deadline {
            if mailbox.withLock({ $0.closeRequested }) { return false }
            var fds = [pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
            let remaining = Int32(max(1, min(100, (deadline - .now).seconds * 1000)))
            _ = poll(&fds, 1, remaining)
            if fds[0].revents & Int16(POLLIN) != 0 {
                var value: UInt64 = 0
                _ = read(wakeFD, &value, 8)
            }
        }
        return !mailbox.withLock { $0.closeRequested }
    }

    /// Frees a broken connection and forgets everything tied to it; the machine keeps what
    /// must survive (unconfirmed publishes, consumers, topologies).
    private func dropConnection() {
        if let connection {
            amqp_destroy_connection(connection)
        }
        connection = nil
        publishFrames = nil
        controlChannelOpen = false
        assembling.removeAll()
        consumerByChannel.removeAll()
        for record in machine.consumers {
            record.coalescer = AckCoalescer()
            record.lastDeliveredTag = 0
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
            _ = amqp_connection_close(connection, Int32(AMQP_REPLY_SUCCESS))
        }
        dropConnection()
        if let error = finish.startupError {
            logger.warning("AMQP connect failed", metadata: AMQPLogKey.metadata([.error: "\(error)"]))
            let startup = mailbox.withLock { box in
                box.finished = true
                box.state = .closed
                return box.startup.take()
            }
            startup?.resume(throwing: error)
            return
        }
        let closed = AMQPError(.connectionClosed, "the connection was closed before the broker confirmed")
        for pending in finish.failing { pending.completion.settle(index: pending.index, error: closed) }
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
        for command in commands { Self.fail(command, with: closed) }
        logger.info("AMQP connection closed")
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
        guard let connection else { throw AMQPError(.connectionLost, "not connected") }
        try openControlChannel()
        let channel = Self.controlChannel
        arena.reset()
        defer { arena.reset() }
        for exchange in topology.exchanges {
            amqp_exchange_declare(
                connection, channel, arena.bytes(exchange.name), arena.bytes(exchange.kind.rawValue), 0,
                exchange.durable ? 1 : 0, 0, 0, arena.table(exchange.arguments))
            try check(reply: amqp_get_rpc_reply(connection), channel: channel, "declare exchange \(exchange.name)")
        }
        for queue in topology.queues {
            amqp_queue_declare(
                connection, channel, arena.bytes(queue.name), 0, queue.durable ? 1 : 0, 0, 0,
                arena.table(queue.arguments))
            try check(reply: amqp_get_rpc_reply(connection), channel: channel, "declare queue \(queue.name)")
        }
        for binding in topology.bindings {
            amqp_queue_bind(
                connection, channel, arena.bytes(binding.queue), arena.bytes(binding.exchange),
                arena.bytes(binding.routingKey), amqp_empty_table)
            try check(
                reply: amqp_get_rpc_reply(connection), channel: channel,
                "bind \(binding.queue) to \(binding.exchange) with \(binding.routingKey)")
        }
    }

    private func perform(_ operation: QueueOperation) throws(AMQPError) -> Int {
        guard let connection else { throw AMQPError(.connectionLost, "not connected") }
        try openControlChannel()
        let channel = Self.controlChannel
        arena.reset()
        defer { arena.reset() }
        switch operation {
        case .count(let queue), .consumers(let queue):
            let ok = amqp_queue_declare(connection, channel, arena.bytes(queue), 1, 0, 0, 0, amqp_empty_table)
            try check(reply: amqp_get_rpc_reply(connection), channel: channel, "inspect queue \(queue)")
            if case .consumers = operation { return Int(ok?.pointee.consumer_count ?? 0) }
            return Int(ok?.pointee.message_count ?? 0)
        case .purge(let queue):
            let ok = amqp_queue_purge(connection, channel, arena.bytes(queue))
            try check(reply: amqp_get_rpc_reply(connection), channel: channel, "purge queue \(queue)")
            return Int(ok?.pointee.message_count ?? 0)
        case .deleteQueue(let queue):
            let ok = amqp_queue_delete(connection, channel, arena.bytes(queue), 0, 0)
            try check(reply: amqp_get_rpc_reply(connection), channel: channel, "delete queue \(queue)")
            machine.queueDeleted(queue)
            return Int(ok?.pointee.message_count ?? 0)
        case .deleteExchange(let exchange):
            amqp_exchange_delete(connection, channel, arena.bytes(exchange), 0)
            try check(reply: amqp_get_rpc_reply(connection), channel: channel, "delete exchange \(exchange)")
            machine.exchangeDeleted(exchange)
            return 0
        }
    }

    private func subscribe(_ record: ConsumerRecord) throws(AMQPError) {
        guard let connection else { throw AMQPError(.connectionLost, "not connected") }
        let channel = nextChannel
        nextChannel += 1
        arena.reset()
        defer { arena.reset() }
        amqp_channel_open(connection, channel)
        try check(reply: amqp_get_rpc_reply(connection), channel: channel, "channel.open")
        amqp_basic_qos(connection, channel, 0, record.prefetch, 0)
        try check(reply: amqp_get_rpc_reply(connection), channel: channel, "basic.qos")
        amqp_basic_consume(connection, channel, arena.bytes(record.queue), arena.bytes(record.tag), 0, 0, 0, amqp_empty_table)
        try check(reply: amqp_get_rpc_reply(connection), channel: channel, "consume \(record.queue)")
        record.channel = channel
        record.coalescer = AckCoalescer()
        record.lastDeliveredTag = 0
        consumerByChannel[channel] = record.id
    }

    private func cancel(_ record: ConsumerRecord, closeChannel: Bool) throws(AMQPError) {
        record.active = false
        guard let connection, record.channel != 0 else {
            machine.consumerRemoved(id: record.id)
            record.deliveries.finish()
            return
        }
        if closeChannel {
            machine.consumerRemoved(id: record.id)
            consumerByChannel[record.channel] = nil
            try flushAcks(record)
            let reply = amqp_channel_close(connection, record.channel, Int32(AMQP_REPLY_SUCCESS))
            try check(reply: reply, channel: record.channel, "channel.close")
            record.deliveries.finish()
        } else {
            arena.reset()
            defer { arena.reset() }
            amqp_basic_cancel(connection, record.channel, arena.bytes(record.tag))
            try check(reply: amqp_get_rpc_reply(connection), channel: record.channel, "basic.cancel")
            // Deliveries that arrived before cancel-ok may still sit in rabbitmq-c's frame
            // queue; the sequence ends once they are handed over.
            record.finishPending = true
        }
    }

    private func apply(_ settlement: Settlement, consumers: [ConsumerRecord]? = nil) throws(AMQPError) {
        guard let connection, settlement.generation == generation,
            let id = consumerByChannel[settlement.channel],
            let record = consumers?.first(where: { $0.id == id }) ?? machine.consumer(id: id)
        else { return }  // from before a reconnect: the broker requeued it already
        let tag = settlement.tag
        let channel = settlement.channel
        switch settlement.kind {
        case .ack(multiple: false):
            record.coalescer.ack(tag)
            return
        case .ack(multiple: true):
            try flushAcks(record)
            try checkStatus(amqp_basic_ack(connection, channel, tag, 1))
            record.coalescer.settledDirectly(tag, multiple: true)
        case .nack(let requeue, let multiple):
            try flushAcks(record)
            try checkStatus(amqp_basic_nack(connection, channel, tag, multiple ? 1 : 0, requeue ? 1 : 0))
            record.coalescer.settledDirectly(tag, multiple: multiple)
        case .reject(let requeue):
            try flushAcks(record)
            try checkStatus(amqp_basic_reject(connection, channel, tag, requeue ? 1 : 0))
            record.coalescer.settledDirectly(tag, multiple: false)
        }
    }

    private func flushAcks(_ record: ConsumerRecord, force: Bool = true) throws(AMQPError) {
        guard let connection, record.channel != 0 else { return }
        for frame in record.coalescer.flush(force: force) {
            guard case .ack(let tag, let multiple) = frame else { continue }
            try checkStatus(amqp_basic_ack(connection, record.channel, tag, multiple ? 1 : 0))
        }
    }

    // MARK: Publishing

    private func sendWaitingPublishes() throws(AMQPError) {
        guard let connection, machine.canPublish else { return }
        // A frozen broker stops reading; never block inside a send that heartbeats can't
        // interrupt. Only write while the socket has room.
        var probe = pollfd(fd: amqp_get_sockfd(connection), events: Int16(POLLOUT), revents: 0)
        _ = poll(&probe, 1, 0)
        socketWritable = probe.revents & Int16(POLLOUT) != 0
        guard socketWritable else { return }
        var budget = 256 * 1024
        let frames = configuration.tls == nil ? framesBuffer(connection) : nil
        while budget > 0, let (_, pending) = machine.nextPublish() {
            budget -= pending.message.body.count + 256
            try publishOnWire(pending, connection, into: frames)
        }
        if let frames, !frames.isEmpty {
            try frames.send(to: amqp_get_sockfd(connection), timeout: sendTimeout)
        }
    }

    private func framesBuffer(_ connection: amqp_connection_state_t) -> PublishFrames {
        if let publishFrames { return publishFrames }
        let frames = PublishFrames(frameMax: Int(amqp_get_frame_max(connection)))
        publishFrames = frames
        return frames
    }

    /// How long a send may wait for socket room: as long as a silent broker is tolerated.
    private var sendTimeout: Duration {
        configuration.heartbeat > .zero ? configuration.heartbeat * 2 : .seconds(30)
    }

    /// Publishes one message: into `frames` when given (written later in one go), otherwise
    /// through rabbitmq-c at once.
    private func publishOnWire(
        _ pending: PendingPublish, _ connection: amqp_connection_state_t, into frames: PublishFrames?
    ) throws(AMQPError) {
        let message = pending.message
        arena.reset()
        defer { arena.reset() }
        var properties = arena.properties(message.properties)
        let exchange = arena.bytes(message.exchange)
        let routingKey = arena.bytes(message.routingKey)
        let result = message.body.withUnsafeBytes { body in
            Result { () throws(AMQPError) in
                if let frames {
                    try frames.append(
                        channel: Self.publisherChannel, exchange: exchange, routingKey: routingKey,
                        mandatory: message.mandatory, properties: &properties, body: body)
                } else {
                    let bytes = amqp_bytes_t(len: body.count, bytes: UnsafeMutableRawPointer(mutating: body.baseAddress))
                    try checkStatus(amqp_basic_publish(
                        connection, Self.publisherChannel, exchange, routingKey, message.mandatory ? 1 : 0, 0, &properties,
                        bytes))
                }
            }
        }
        try result.get()
    }

    // MARK: Reading

    /// Reads and handles the frames already available, without blocking.
    private func readFrames() throws(AMQPError) -> Int {
        guard let connection else { return 0 }
        var frame = amqp_frame_t()
        var zero = timeval(tv_sec: 0, tv_usec: 0)
        var count = 0
        while count < 1024 {
            let status = amqp_simple_wait_frame_noblock(connection, &frame, &zero)
            if status == AMQP_STATUS_TIMEOUT.rawValue { break }
            try checkStatus(status)
            count += 1
            try handle(frame)
        }
        if count > 0 { machine.inboundActivity(now: clock.now) }
        return count
    }

    private func handle(_ frame: amqp_frame_t) throws(AMQPError) {
        let channel = frame.channel
        switch Int32(frame.frame_type) {
        case AMQP_FRAME_METHOD:
            try handleMethod(frame.payload.method, channel: channel)
        case AMQP_FRAME_HEADER:
            // Taken out of the dictionary, not copied, so appending to the body never
            // triggers a copy-on-write of it.
            guard var assembly = assembling.removeValue(forKey: channel) else { return }
            if let decoded = frame.payload.properties.decoded {
                assembly.properties = AMQPProperties(decoded.assumingMemoryBound(to: amqp_basic_properties_t.self).pointee)
            }
            assembly.expected = Int(frame.payload.properties.body_size)
            assembly.body.reserveCapacity(assembly.expected)
            if assembly.expected == 0 {
                complete(assembly, channel: channel)
            } else {
                assembling[channel] = assembly
            }
        case AMQP_FRAME_BODY:
            guard var assembly = assembling.removeValue(forKey: channel) else { return }
            let fragment = frame.payload.body_fragment
            if let bytes = fragment.bytes, fragment.len > 0 {
                assembly.body.append(bytes.assumingMemoryBound(to: UInt8.self), count: fragment.len)
            }
            if assembly.body.count >= assembly.expected {
                complete(assembly, channel: channel)
            } else {
                assembling[channel] = assembly
            }
        default:
            break
        }
    }

    private func handleMethod(_ method: amqp_method_t, channel: UInt16) throws(AMQPError) {
        let decoded = method.decoded
        switch Int(method.id) {
        case LIVELINE_BASIC_DELIVER:
            guard let deliver = decoded?.assumingMemoryBound(to: amqp_basic_deliver_t.self).pointee,
                let id = consumerByChannel[channel]
            else { return }
            assembling[channel] = ContentAssembly(
                kind: .delivery(
                    consumer: id, tag: deliver.delivery_tag, redelivered: deliver.redelivered != 0,
                    exchange: String(deliver.exchange), routingKey: String(deliver.routing_key)))
        case LIVELINE_BASIC_ACK where channel == Self.publisherChannel:
            guard let ack = decoded?.assumingMemoryBound(to: amqp_basic_ack_t.self).pointee else { return }
            for outcome in machine.publishConfirmed(tag: ack.delivery_tag, multiple: ack.multiple != 0) {
                settle(outcome)
            }
        case LIVELINE_BASIC_NACK where channel == Self.publisherChannel:
            guard let nack = decoded?.assumingMemoryBound(to: amqp_basic_nack_t.self).pointee else { return }
            for outcome in machine.publishNacked(tag: nack.delivery_tag, multiple: nack.multiple != 0) {
                settle(outcome)
            }
        case LIVELINE_BASIC_RETURN:
            guard let info = decoded?.assumingMemoryBound(to: amqp_basic_return_t.self).pointee else { return }
            let error = AMQPError(
                .unroutable, replyCode: AMQPReplyCode(rawValue: info.reply_code),
                "no queue is bound to exchange '\(String(info.exchange))' for routing key '\(String(info.routing_key))': \(String(info.reply_text))"
            )
            assembling[channel] = ContentAssembly(kind: .returned(error))
        case LIVELINE_BASIC_CANCEL:
            guard let id = consumerByChannel[channel], let record = machine.consumer(id: id) else { return }
            record.active = false
            machine.consumerRemoved(id: id)
            logger.warning("AMQP broker cancelled a consumer", metadata: AMQPLogKey.metadata([.queue: "\(record.queue)"]))
            record.deliveries.finish(
                throwing: AMQPError(
                    .consumerCancelled, "the broker cancelled the consumer of queue \(record.queue) (deleted or moved)"))
        case LIVELINE_CONNECTION_BLOCKED:
            machine.brokerBlocked()
            publishState()
            logger.warning("AMQP broker blocked publishing (resource alarm); publishes wait")
        case LIVELINE_CONNECTION_UNBLOCKED:
            machine.brokerUnblocked()
            publishState()
            logger.info("AMQP broker unblocked publishing")
        case LIVELINE_CONNECTION_CLOSE:
            throw serverClose(decoded, channel: 0)
        case LIVELINE_CHANNEL_CLOSE:
            let error = serverClose(decoded, channel: channel)
            if channel == Self.controlChannel {
                controlChannelOpen = false
                return
            }
            // A publisher or consumer channel died under us: rebuild the connection so every
            // piece of state is consistent again.
            throw AMQPError(.connectionLost, replyCode: error.replyCode, "channel \(channel) closed: \(error.message)")
        default:
            break
        }
    }

    private func complete(_ assembly: ContentAssembly, channel: UInt16) {
        switch assembly.kind {
        case .delivery(let consumerID, let tag, let redelivered, let exchange, let routingKey):
            guard let record = machine.consumer(id: consumerID) else { return }
            let delivery = AMQPDelivery(
                body: assembly.body, properties: assembly.properties ?? AMQPProperties(persistent: false),
                exchange: exchange, routingKey: routingKey, redelivered: redelivered, deliveryTag: tag,
                queue: record.queue, channel: channel, generation: generation, settler: self)
            record.lastDeliveredTag = tag
            record.deliveries.yield(delivery)
        case .returned(let error):
            // The broker sends basic.return before the confirm of the same publish; match it by
            // message id to the oldest unconfirmed publish not yet marked.
            let messageID = assembly.properties?.messageID
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

    // MARK: Errors

    private func serverClose(_ decoded: UnsafeMutableRawPointer?, channel: UInt16) -> AMQPError {
        var code: UInt16 = 0
        var text = ""
        if channel == 0 {
            if let close = decoded?.assumingMemoryBound(to: amqp_connection_close_t.self).pointee {
                code = close.reply_code
                text = String(close.reply_text)
            }
            if let connection {
                var ok = amqp_connection_close_ok_t()
                amqp_send_method(connection, 0, amqp_method_number_t(LIVELINE_CONNECTION_CLOSE_OK), &ok)
            }
            return AMQPError(.serverClosed, replyCode: AMQPReplyCode(rawValue: code), text)
        }
        if let close = decoded?.assumingMemoryBound(to: amqp_channel_close_t.self).pointee {
            code = close.reply_code
            text = String(close.reply_text)
        }
        if let connection {
            var ok = amqp_channel_close_ok_t()
            amqp_send_method(connection, channel, amqp_method_number_t(LIVELINE_CHANNEL_CLOSE_OK), &ok)
        }
        return AMQPError(.channelClosed, replyCode: AMQPReplyCode(rawValue: code), text)
    }

    private func check(reply: amqp_rpc_reply_t, channel: UInt16, _ what: String) throws(AMQPError) {
        switch reply.reply_type {
        case AMQP_RESPONSE_NORMAL:
            return
        case AMQP_RESPONSE_SERVER_EXCEPTION:
            if Int(reply.reply.id) == LIVELINE_CONNECTION_CLOSE {
                let error = serverClose(reply.reply.decoded, channel: 0)
                throw AMQPError(.serverClosed, replyCode: error.replyCode, "\(what): \(error.message)")
            }
            let error = serverClose(reply.reply.decoded, channel: channel)
            if channel == Self.controlChannel { controlChannelOpen = false }
            throw AMQPError(.channelClosed, replyCode: error.replyCode, "\(what): \(error.message)")
        case AMQP_RESPONSE_LIBRARY_EXCEPTION:
            throw AMQPError(.connectionLost, "\(what): \(Self.describe(reply.library_error))")
        default:
            throw AMQPError(.connectionLost, "\(what): no reply from the broker")
        }
    }

    private func checkStatus(_ status: Int32) throws(AMQPError) {
        guard status != 0 else { return }
        if status == AMQP_STATUS_HEARTBEAT_TIMEOUT.rawValue {
            throw AMQPError(.heartbeatTimeout, "the broker missed its heartbeats")
        }
        throw AMQPError(.connectionLost, Self.describe(status))
    }

    private static func describe(_ status: Int32) -> String {
        String(cString: amqp_error_string2(status))
    }

    private static func cTimeval(_ duration: Duration) -> Glibc.timeval {
        let micros = Int(duration.seconds * 1_000_000)
        return Glibc.timeval(tv_sec: micros / 1_000_000, tv_usec: micros % 1_000_000)
    }
}

/// A message whose method frame arrived and whose header and body frames are being read.
struct ContentAssembly {
    enum Kind {
        case delivery(consumer: UInt64, tag: UInt64, redelivered: Bool, exchange: String, routingKey: String)
        case returned(AMQPError)
    }
    var kind: Kind
    var properties: AMQPProperties?
    var expected = 0
    var body = Data()
}

extension AMQPError {
    /// Whether the whole connection is unusable (rather than one channel).
    var isConnectionLevel: Bool {
        [.connectionLost, .serverClosed, .heartbeatTimeout, .connectionFailed].contains(code)
    }
}
