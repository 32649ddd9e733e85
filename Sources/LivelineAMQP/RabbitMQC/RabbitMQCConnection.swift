import CRabbitMQ
import Foundation

// Tests: Tests/LivelineAMQPTests/AMQPIntegrationTests.swift, Tests/LivelineAMQPTests/BrokerFailureTests.swift

/// One rabbitmq-c connection (`amqp_connection_state_t`) with Swift-typed operations: every
/// C call of the connection happens here, and no C type leaves this folder.
///
/// Not thread-safe, like rabbitmq-c itself: it lives on its connection's owner thread. The
/// factory frees what it allocated when a step fails, and `deinit` frees the rest.
final class RabbitMQCConnection {
    /// A frame read from the broker, as the owner thread needs it.
    enum Frame {
        case deliver(channel: UInt16, tag: UInt64, redelivered: Bool, exchange: String, routingKey: String)
        case returned(channel: UInt16, AMQPError)
        /// A content header. `properties` is nil when the frame carried none.
        case header(channel: UInt16, properties: AMQPProperties?, bodySize: Int)
        /// Valid until the next call on this connection: copy it.
        case body(channel: UInt16, UnsafeRawBufferPointer)
        case ack(channel: UInt16, tag: UInt64, multiple: Bool)
        case nack(channel: UInt16, tag: UInt64, multiple: Bool)
        case consumerCancelled(channel: UInt16)
        case blocked
        case unblocked
        /// The broker closed the connection; close-ok was sent.
        case connectionClosed(AMQPError)
        /// The broker closed a channel; close-ok was sent.
        case channelClosed(channel: UInt16, AMQPError)
        /// Anything else (heartbeats are answered by rabbitmq-c itself).
        case other
    }

    private let state: amqp_connection_state_t
    /// Memory for the strings and tables of one call; reset after each.
    private let arena = CArena()
    /// Header names and content types of incoming messages, made once.
    private var names = StringInterner()

    private init(state: amqp_connection_state_t) {
        self.state = state
    }

    deinit {
        amqp_destroy_connection(state)
    }

    /// Opens a socket to `broker` (TLS when configured) and logs in.
    static func open(
        to broker: AMQPConfiguration.Broker, configuration: AMQPConfiguration
    ) throws(AMQPError) -> RabbitMQCConnection {
        guard let state = amqp_new_connection() else {
            throw AMQPError(.connectionFailed, "rabbitmq-c could not allocate a connection")
        }
        // From here on, deinit frees the connection and whatever socket it was given.
        let connection = RabbitMQCConnection(state: state)
        try connection.openSocket(to: broker, configuration)
        try connection.login(configuration)
        return connection
    }

    private func openSocket(to broker: AMQPConfiguration.Broker, _ configuration: AMQPConfiguration) throws(AMQPError) {
        let socket: OpaquePointer?
        if let tls = configuration.tls {
            socket = amqp_ssl_socket_new(state)
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
            socket = amqp_tcp_socket_new(state)
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
        amqp_set_handshake_timeout(state, &timeout)
        amqp_set_rpc_timeout(state, &timeout)
    }

    private func login(_ configuration: AMQPConfiguration) throws(AMQPError) {
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
            state, configuration.virtualHost, 0, 131_072, Int32(configuration.heartbeat.seconds.rounded()),
            &properties, configuration.username, configuration.password)
        // A broker that does not honour authentication_failure_close refuses credentials by
        // closing the socket; a timeout is not a refusal and stays retriable.
        let closedOnLogin =
            reply.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION
            && reply.library_error == AMQP_STATUS_CONNECTION_CLOSED.rawValue
        do {
            try check(reply, channel: 0, "login")
        } catch {
            if error.replyCode == .accessRefused || closedOnLogin {
                throw AMQPError(
                    .authenticationFailed, replyCode: error.replyCode,
                    "the broker refused user \(configuration.username) on vhost \(configuration.virtualHost): \(error.message)")
            }
            throw error
        }
    }

    // MARK: - Facts

    /// The socket, for `poll` and for writing publish frames directly.
    var socket: Int32 { amqp_get_sockfd(state) }

    /// The negotiated maximum frame size.
    var frameMax: Int { Int(amqp_get_frame_max(state)) }

    /// Whether rabbitmq-c holds frames already decoded but not yet handed out.
    var hasQueuedFrames: Bool { amqp_frames_enqueued(state) != 0 }

    /// Whether a read would return something without touching the socket.
    var hasBufferedInput: Bool { amqp_data_in_buffer(state) != 0 || amqp_frames_enqueued(state) != 0 }

    /// Lets rabbitmq-c recycle the memory of frames already handled.
    func releaseBuffers() {
        amqp_maybe_release_buffers(state)
    }

    // MARK: - Channels

    func openChannel(_ channel: UInt16) throws(AMQPError) {
        amqp_channel_open(state, channel)
        try check(amqp_get_rpc_reply(state), channel: channel, "channel.open")
    }

    func closeChannel(_ channel: UInt16) throws(AMQPError) {
        try check(amqp_channel_close(state, channel, Int32(AMQP_REPLY_SUCCESS)), channel: channel, "channel.close")
    }

    func selectConfirms(on channel: UInt16) throws(AMQPError) {
        amqp_confirm_select(state, channel)
        try check(amqp_get_rpc_reply(state), channel: channel, "confirm.select")
    }

    // MARK: - Topology and queues

    func declare(_ exchange: AMQPTopology.Exchange, on channel: UInt16) throws(AMQPError) {
        arena.reset()
        defer { arena.reset() }
        amqp_exchange_declare(
            state, channel, arena.bytes(exchange.name), arena.bytes(exchange.kind.rawValue), 0,
            exchange.durable ? 1 : 0, 0, 0, arena.table(exchange.arguments))
        try check(amqp_get_rpc_reply(state), channel: channel, "declare exchange \(exchange.name)")
    }

    func declare(_ queue: AMQPTopology.Queue, on channel: UInt16) throws(AMQPError) {
        arena.reset()
        defer { arena.reset() }
        amqp_queue_declare(state, channel, arena.bytes(queue.name), 0, queue.durable ? 1 : 0, 0, 0, arena.table(queue.arguments))
        try check(amqp_get_rpc_reply(state), channel: channel, "declare queue \(queue.name)")
    }

    func bind(_ binding: AMQPTopology.Binding, on channel: UInt16) throws(AMQPError) {
        arena.reset()
        defer { arena.reset() }
        amqp_queue_bind(
            state, channel, arena.bytes(binding.queue), arena.bytes(binding.exchange),
            arena.bytes(binding.routingKey), amqp_empty_table)
        try check(
            amqp_get_rpc_reply(state), channel: channel,
            "bind \(binding.queue) to \(binding.exchange) with \(binding.routingKey)")
    }

    func bind(_ binding: AMQPTopology.ExchangeBinding, on channel: UInt16) throws(AMQPError) {
        arena.reset()
        defer { arena.reset() }
        amqp_exchange_bind(
            state, channel, arena.bytes(binding.destination), arena.bytes(binding.source),
            arena.bytes(binding.routingKey), amqp_empty_table)
        try check(
            amqp_get_rpc_reply(state), channel: channel,
            "bind exchange \(binding.destination) to \(binding.source) with \(binding.routingKey)")
    }

    func unbind(_ binding: AMQPTopology.ExchangeBinding, on channel: UInt16) throws(AMQPError) {
        arena.reset()
        defer { arena.reset() }
        amqp_exchange_unbind(
            state, channel, arena.bytes(binding.destination), arena.bytes(binding.source),
            arena.bytes(binding.routingKey), amqp_empty_table)
        try check(
            amqp_get_rpc_reply(state), channel: channel,
            "unbind exchange \(binding.destination) from \(binding.source) with \(binding.routingKey)")
    }

    /// Declares an exclusive queue: it lives as long as this connection, and
    /// no other connection may declare it meanwhile (`RESOURCE_LOCKED`).
    func declareExclusive(queue: String, on channel: UInt16) throws(AMQPError) {
        arena.reset()
        defer { arena.reset() }
        amqp_queue_declare(state, channel, arena.bytes(queue), 0, 0, 1, 1, amqp_empty_table)
        try check(amqp_get_rpc_reply(state), channel: channel, "declare exclusive queue \(queue)")
    }

    /// A passive declare: how many messages are ready and how many consumers subscribe.
    func inspect(queue: String, on channel: UInt16) throws(AMQPError) -> (messages: Int, consumers: Int) {
        arena.reset()
        defer { arena.reset() }
        let ok = amqp_queue_declare(state, channel, arena.bytes(queue), 1, 0, 0, 0, amqp_empty_table)
        try check(amqp_get_rpc_reply(state), channel: channel, "inspect queue \(queue)")
        return (Int(ok?.pointee.message_count ?? 0), Int(ok?.pointee.consumer_count ?? 0))
    }

    /// Returns how many messages were removed.
    func purge(queue: String, on channel: UInt16) throws(AMQPError) -> Int {
        arena.reset()
        defer { arena.reset() }
        let ok = amqp_queue_purge(state, channel, arena.bytes(queue))
        try check(amqp_get_rpc_reply(state), channel: channel, "purge queue \(queue)")
        return Int(ok?.pointee.message_count ?? 0)
    }

    /// Returns how many messages the queue held.
    func delete(queue: String, on channel: UInt16) throws(AMQPError) -> Int {
        arena.reset()
        defer { arena.reset() }
        let ok = amqp_queue_delete(state, channel, arena.bytes(queue), 0, 0)
        try check(amqp_get_rpc_reply(state), channel: channel, "delete queue \(queue)")
        return Int(ok?.pointee.message_count ?? 0)
    }

    func delete(exchange: String, on channel: UInt16) throws(AMQPError) {
        arena.reset()
        defer { arena.reset() }
        amqp_exchange_delete(state, channel, arena.bytes(exchange), 0)
        try check(amqp_get_rpc_reply(state), channel: channel, "delete exchange \(exchange)")
    }

    // MARK: - Consuming

    func setPrefetch(_ prefetch: UInt16, on channel: UInt16) throws(AMQPError) {
        amqp_basic_qos(state, channel, 0, prefetch, 0)
        try check(amqp_get_rpc_reply(state), channel: channel, "basic.qos")
    }

    /// Subscribes with manual acks.
    func consume(queue: String, tag: String, on channel: UInt16) throws(AMQPError) {
        arena.reset()
        defer { arena.reset() }
        amqp_basic_consume(state, channel, arena.bytes(queue), arena.bytes(tag), 0, 0, 0, amqp_empty_table)
        try check(amqp_get_rpc_reply(state), channel: channel, "consume \(queue)")
    }

    func cancel(consumerTag tag: String, on channel: UInt16) throws(AMQPError) {
        arena.reset()
        defer { arena.reset() }
        amqp_basic_cancel(state, channel, arena.bytes(tag))
        try check(amqp_get_rpc_reply(state), channel: channel, "basic.cancel")
    }

    func ack(_ tag: UInt64, multiple: Bool, on channel: UInt16) throws(AMQPError) {
        try Self.check(status: amqp_basic_ack(state, channel, tag, multiple ? 1 : 0))
    }

    func nack(_ tag: UInt64, multiple: Bool, requeue: Bool, on channel: UInt16) throws(AMQPError) {
        try Self.check(status: amqp_basic_nack(state, channel, tag, multiple ? 1 : 0, requeue ? 1 : 0))
    }

    func reject(_ tag: UInt64, requeue: Bool, on channel: UInt16) throws(AMQPError) {
        try Self.check(status: amqp_basic_reject(state, channel, tag, requeue ? 1 : 0))
    }

    // MARK: - Publishing

    /// Publishes one message: into `frames` when given (written later in one go, plain TCP
    /// only), otherwise through rabbitmq-c at once (three writes; the TLS path).
    func publish(_ message: AMQPMessage, on channel: UInt16, into frames: PublishFrames?) throws(AMQPError) {
        // Every string is lent for this call only (see CScoped.swift): no allocation per string.
        let mandatory = message.mandatory
        let result = message.withCPublish { exchange, routingKey, properties, body in
            Result { () throws(AMQPError) in
                if let frames {
                    try frames.append(
                        channel: channel, exchange: exchange, routingKey: routingKey,
                        mandatory: mandatory, properties: &properties, body: body)
                } else {
                    let bytes = amqp_bytes_t(len: body.count, bytes: UnsafeMutableRawPointer(mutating: body.baseAddress))
                    try Self.check(
                        status: amqp_basic_publish(state, channel, exchange, routingKey, mandatory ? 1 : 0, 0, &properties, bytes))
                }
            }
        }
        try result.get()
    }

    // MARK: - Reading

    /// The next frame if one is ready, without blocking; nil when none is.
    func nextFrame() throws(AMQPError) -> Frame? {
        var frame = amqp_frame_t()
        var zero = timeval(tv_sec: 0, tv_usec: 0)
        let status = amqp_simple_wait_frame_noblock(state, &frame, &zero)
        if status == AMQP_STATUS_TIMEOUT.rawValue { return nil }
        try Self.check(status: status)
        let channel = frame.channel
        switch Int32(frame.frame_type) {
        case AMQP_FRAME_METHOD:
            return method(frame.payload.method, channel: channel)
        case AMQP_FRAME_HEADER:
            var properties: AMQPProperties?
            if let decoded = frame.payload.properties.decoded {
                properties = AMQPProperties(decoded.assumingMemoryBound(to: amqp_basic_properties_t.self).pointee, names: &names)
            }
            return .header(channel: channel, properties: properties, bodySize: Int(frame.payload.properties.body_size))
        case AMQP_FRAME_BODY:
            let fragment = frame.payload.body_fragment
            return .body(channel: channel, UnsafeRawBufferPointer(start: fragment.bytes, count: fragment.bytes == nil ? 0 : fragment.len))
        default:
            return .other
        }
    }

    private func method(_ method: amqp_method_t, channel: UInt16) -> Frame {
        let decoded = method.decoded
        switch Int(method.id) {
        case LIVELINE_BASIC_DELIVER:
            guard let deliver = decoded?.assumingMemoryBound(to: amqp_basic_deliver_t.self).pointee else { return .other }
            return .deliver(
                channel: channel, tag: deliver.delivery_tag, redelivered: deliver.redelivered != 0,
                exchange: String(deliver.exchange), routingKey: String(deliver.routing_key))
        case LIVELINE_BASIC_ACK:
            guard let ack = decoded?.assumingMemoryBound(to: amqp_basic_ack_t.self).pointee else { return .other }
            return .ack(channel: channel, tag: ack.delivery_tag, multiple: ack.multiple != 0)
        case LIVELINE_BASIC_NACK:
            guard let nack = decoded?.assumingMemoryBound(to: amqp_basic_nack_t.self).pointee else { return .other }
            return .nack(channel: channel, tag: nack.delivery_tag, multiple: nack.multiple != 0)
        case LIVELINE_BASIC_RETURN:
            guard let info = decoded?.assumingMemoryBound(to: amqp_basic_return_t.self).pointee else { return .other }
            return .returned(
                channel: channel,
                AMQPError(
                    .unroutable, replyCode: AMQPReplyCode(rawValue: info.reply_code),
                    "no queue is bound to exchange '\(String(info.exchange))' for routing key '\(String(info.routing_key))': \(String(info.reply_text))"
                ))
        case LIVELINE_BASIC_CANCEL:
            return .consumerCancelled(channel: channel)
        case LIVELINE_CONNECTION_BLOCKED:
            return .blocked
        case LIVELINE_CONNECTION_UNBLOCKED:
            return .unblocked
        case LIVELINE_CONNECTION_CLOSE:
            return .connectionClosed(serverClose(decoded, channel: 0))
        case LIVELINE_CHANNEL_CLOSE:
            return .channelClosed(channel: channel, serverClose(decoded, channel: channel))
        default:
            return .other
        }
    }

    // MARK: - Heartbeats and close

    func sendHeartbeat() throws(AMQPError) {
        var frame = amqp_frame_t()
        frame.frame_type = UInt8(AMQP_FRAME_HEARTBEAT)
        frame.channel = 0
        try Self.check(status: amqp_send_frame(state, &frame))
    }

    /// Sends `connection.close` and waits for close-ok; errors are moot by then.
    func close() {
        _ = amqp_connection_close(state, Int32(AMQP_REPLY_SUCCESS))
    }

    // MARK: - Errors

    /// Answers a close from the broker with close-ok and returns it as an error.
    private func serverClose(_ decoded: UnsafeMutableRawPointer?, channel: UInt16) -> AMQPError {
        var code: UInt16 = 0
        var text = ""
        if channel == 0 {
            if let close = decoded?.assumingMemoryBound(to: amqp_connection_close_t.self).pointee {
                code = close.reply_code
                text = String(close.reply_text)
            }
            var ok = amqp_connection_close_ok_t()
            amqp_send_method(state, 0, amqp_method_number_t(LIVELINE_CONNECTION_CLOSE_OK), &ok)
            return AMQPError(.serverClosed, replyCode: AMQPReplyCode(rawValue: code), text)
        }
        if let close = decoded?.assumingMemoryBound(to: amqp_channel_close_t.self).pointee {
            code = close.reply_code
            text = String(close.reply_text)
        }
        var ok = amqp_channel_close_ok_t()
        amqp_send_method(state, channel, amqp_method_number_t(LIVELINE_CHANNEL_CLOSE_OK), &ok)
        return AMQPError(.channelClosed, replyCode: AMQPReplyCode(rawValue: code), text)
    }

    /// Turns an RPC reply into an error. A channel-level refusal throws `channelClosed` (the
    /// channel is gone: callers reopen it); a connection-level one `serverClosed`.
    private func check(_ reply: amqp_rpc_reply_t, channel: UInt16, _ what: String) throws(AMQPError) {
        switch reply.reply_type {
        case AMQP_RESPONSE_NORMAL:
            return
        case AMQP_RESPONSE_SERVER_EXCEPTION:
            if Int(reply.reply.id) == LIVELINE_CONNECTION_CLOSE {
                let error = serverClose(reply.reply.decoded, channel: 0)
                throw AMQPError(.serverClosed, replyCode: error.replyCode, "\(what): \(error.message)")
            }
            let error = serverClose(reply.reply.decoded, channel: channel)
            throw AMQPError(.channelClosed, replyCode: error.replyCode, "\(what): \(error.message)")
        case AMQP_RESPONSE_LIBRARY_EXCEPTION:
            throw AMQPError(.connectionLost, "\(what): \(Self.describe(reply.library_error))")
        default:
            throw AMQPError(.connectionLost, "\(what): no reply from the broker")
        }
    }

    static func check(status: Int32) throws(AMQPError) {
        guard status != 0 else { return }
        if status == AMQP_STATUS_HEARTBEAT_TIMEOUT.rawValue {
            throw AMQPError(.heartbeatTimeout, "the broker missed its heartbeats")
        }
        throw AMQPError(.connectionLost, describe(status))
    }

    private static func describe(_ status: Int32) -> String {
        String(cString: amqp_error_string2(status))
    }

    private static func cTimeval(_ duration: Duration) -> Glibc.timeval {
        let micros = Int(duration.seconds * 1_000_000)
        return Glibc.timeval(tv_sec: micros / 1_000_000, tv_usec: micros % 1_000_000)
    }
}
