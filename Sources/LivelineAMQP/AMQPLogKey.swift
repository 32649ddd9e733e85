import LivelineLogging

/// Every logger metadata key of the AMQP layer.
public enum AMQPLogKey: String, LogKey {
    /// The connection's name, as the broker shows it (`liveline-sender-in`).
    case connection = "amqp.connection"
    /// `host:port`; never the credentials.
    case broker = "amqp.broker"
    case attempt = "amqp.attempt"
    /// Attempts it took to reconnect.
    case attempts = "amqp.attempts"
    case queue = "amqp.queue"
    case error = "amqp.error"
}
