// Tests: Tests/LivelineAMQPTests/AMQPIntegrationTests.swift, Tests/LivelineAMQPTests/ConfigurationTests.swift

/// An error raised by the AMQP layer.
///
/// Callers branch on ``code`` (what went wrong), ``replyCode`` (the broker's AMQP reply code,
/// when the broker said it), and the two classifications: ``isRetriable`` (trying the same
/// operation again later can succeed) and ``isFatal`` (the configuration or the topology is
/// wrong; retrying will not help and the process should stop).
public struct AMQPError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. Compare against the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: String, Sendable {
            case connectionFailed = "connection-failed"
            case authenticationFailed = "authentication-failed"
            case tlsFailed = "tls-failed"
            case connectionLost = "connection-lost"
            case heartbeatTimeout = "heartbeat-timeout"
            case confirmTimeout = "confirm-timeout"
            case connectionClosed = "connection-closed"
            case serverClosed = "server-closed"
            case channelClosed = "channel-closed"
            case publishNacked = "publish-nacked"
            case unroutable = "unroutable"
            case consumerCancelled = "consumer-cancelled"
            case invalidArgument = "invalid-argument"
        }
        fileprivate let base: Base

        /// The TCP or AMQP handshake with the broker failed.
        public static let connectionFailed = Code(base: .connectionFailed)
        /// The broker refused the credentials.
        public static let authenticationFailed = Code(base: .authenticationFailed)
        /// The TLS handshake failed: untrusted certificate, wrong host name, or protocol version.
        public static let tlsFailed = Code(base: .tlsFailed)
        /// An established connection broke (socket error, reset).
        public static let connectionLost = Code(base: .connectionLost)
        /// No data arrived from the broker for two heartbeat intervals.
        public static let heartbeatTimeout = Code(base: .heartbeatTimeout)
        /// The broker left a publish unconfirmed for ``AMQPConfiguration/confirmTimeout``; the
        /// connection was replaced and the publish sent again.
        public static let confirmTimeout = Code(base: .confirmTimeout)
        /// ``AMQPConnection/close()`` was called; the operation did not complete before it.
        public static let connectionClosed = Code(base: .connectionClosed)
        /// The broker closed the connection (`connection.close`), see ``AMQPError/replyCode``.
        public static let serverClosed = Code(base: .serverClosed)
        /// The broker closed a channel (`channel.close`), see ``AMQPError/replyCode``.
        public static let channelClosed = Code(base: .channelClosed)
        /// The broker answered a publish with `basic.nack`: it did not take responsibility.
        public static let publishNacked = Code(base: .publishNacked)
        /// A `mandatory` publish matched no queue and came back as `basic.return`.
        public static let unroutable = Code(base: .unroutable)
        /// The broker cancelled a consumer (queue deleted or failed over).
        public static let consumerCancelled = Code(base: .consumerCancelled)
        /// The caller passed something invalid (bad URL, name too long, …).
        public static let invalidArgument = Code(base: .invalidArgument)

        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public var code: Code
    /// The broker's AMQP reply code, when the broker reported the failure.
    public var replyCode: AMQPReplyCode?
    /// A human-readable explanation. Never contains credentials.
    public var message: String

    public init(_ code: Code, replyCode: AMQPReplyCode? = nil, _ message: String) {
        self.code = code
        self.replyCode = replyCode
        self.message = message
    }

    /// Whether trying again later can succeed without anyone changing configuration.
    public var isRetriable: Bool {
        switch code.base {
        case .connectionFailed, .connectionLost, .heartbeatTimeout, .confirmTimeout, .publishNacked:
            return true
        case .serverClosed, .channelClosed:
            return replyCode.map { $0.isTransient } ?? true
        case .authenticationFailed, .tlsFailed, .connectionClosed, .unroutable, .consumerCancelled,
            .invalidArgument:
            return false
        }
    }

    /// Whether the failure comes from configuration or topology, so the process should stop
    /// rather than retry.
    public var isFatal: Bool {
        switch code.base {
        case .authenticationFailed, .tlsFailed, .invalidArgument:
            return true
        case .serverClosed, .channelClosed:
            return replyCode.map { !$0.isTransient } ?? false
        default:
            return false
        }
    }

    public var description: String {
        var text = "AMQP \(code)"
        if let replyCode { text += " (\(replyCode))" }
        return text + ": \(message)"
    }
}

/// An AMQP 0-9-1 reply code, as sent in `connection.close`, `channel.close` and `basic.return`.
public struct AMQPReplyCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let success = AMQPReplyCode(rawValue: 200)
    public static let contentTooLarge = AMQPReplyCode(rawValue: 311)
    public static let noRoute = AMQPReplyCode(rawValue: 312)
    public static let noConsumers = AMQPReplyCode(rawValue: 313)
    public static let connectionForced = AMQPReplyCode(rawValue: 320)
    public static let invalidPath = AMQPReplyCode(rawValue: 402)
    public static let accessRefused = AMQPReplyCode(rawValue: 403)
    public static let notFound = AMQPReplyCode(rawValue: 404)
    public static let resourceLocked = AMQPReplyCode(rawValue: 405)
    public static let preconditionFailed = AMQPReplyCode(rawValue: 406)
    public static let frameError = AMQPReplyCode(rawValue: 501)
    public static let syntaxError = AMQPReplyCode(rawValue: 502)
    public static let commandInvalid = AMQPReplyCode(rawValue: 503)
    public static let channelError = AMQPReplyCode(rawValue: 504)
    public static let unexpectedFrame = AMQPReplyCode(rawValue: 505)
    public static let resourceError = AMQPReplyCode(rawValue: 506)
    public static let notAllowed = AMQPReplyCode(rawValue: 530)
    public static let notImplemented = AMQPReplyCode(rawValue: 540)
    public static let internalError = AMQPReplyCode(rawValue: 541)

    /// Codes a broker sends for conditions that pass (restart, resource alarm, failover).
    var isTransient: Bool {
        [.connectionForced, .resourceError, .internalError, .resourceLocked, .noConsumers].contains(self)
    }

    public var description: String {
        let names: [UInt16: String] = [
            200: "REPLY_SUCCESS", 311: "CONTENT_TOO_LARGE", 312: "NO_ROUTE", 313: "NO_CONSUMERS",
            320: "CONNECTION_FORCED", 402: "INVALID_PATH", 403: "ACCESS_REFUSED", 404: "NOT_FOUND",
            405: "RESOURCE_LOCKED", 406: "PRECONDITION_FAILED", 501: "FRAME_ERROR", 502: "SYNTAX_ERROR",
            503: "COMMAND_INVALID", 504: "CHANNEL_ERROR", 505: "UNEXPECTED_FRAME", 506: "RESOURCE_ERROR",
            530: "NOT_ALLOWED", 540: "NOT_IMPLEMENTED", 541: "INTERNAL_ERROR",
        ]
        return "\(rawValue) \(names[rawValue] ?? "UNKNOWN")"
    }
}
