import LivelineLogging

// Tests: Tests/LivelineRuntimeTests/LogKeyTests.swift

/// Every logger metadata key of the AMQP layer.
public enum AMQPLogKey: String, LogKey {
    /// The connection's name, as the broker shows it (`liveline-sender-in`).
    case connection = "amqp.connection"
    /// `host:port` of every broker configured, comma-separated; never the credentials.
    case broker = "amqp.broker"
    /// `host:port` of the broker a connection was made to, or tried.
    case connectedTo = "amqp.connected_to"
    case attempt = "amqp.attempt"
    /// Attempts it took to reconnect.
    case attempts = "amqp.attempts"
    /// The wait before the next round of the brokers, while the first connection waits for one.
    case retryIn = "amqp.retry_in"
    case queue = "amqp.queue"
    case error = "amqp.error"
}
