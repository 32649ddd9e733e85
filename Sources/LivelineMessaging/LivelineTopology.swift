import LivelineAMQP

/// Liveline's broker topology: names, queue arguments, and how messages flow between them.
///
/// ```
/// producers ─▶ liveline.events (topic, <domain>.<type>) ─▶ liveline.translate (quorum)
/// translator ─▶ liveline.push (topic, #) ─▶ liveline.send (quorum)
/// sender ─▶ liveline.retry (direct, tier) ─▶ liveline.retry.<tier> (TTL) ─▶ liveline.push
/// any work queue (rejected / over delivery limit) and explicit dead letters
///          ─▶ liveline.dead (fanout) ─▶ liveline.dead (quorum, the DLQ)
/// ```
///
/// Work queues are quorum queues with a delivery limit, a dead-letter exchange and
/// at-least-once dead-lettering (which RabbitMQ allows only with `overflow: reject-publish`),
/// so a message the broker gives up on is moved, never dropped.
public struct LivelineTopology: Sendable {
    /// Exchange domain services publish CloudEvents to, routing key `<domain>.<type>`.
    public var eventsExchange = "liveline.events"
    /// Queue the translators consume.
    public var translateQueue = "liveline.translate"
    /// Exchange translators publish push jobs to.
    public var pushExchange = "liveline.push"
    /// Queue the senders consume.
    public var sendQueue = "liveline.send"
    /// Exchange the sender publishes retries to, routing key = tier name.
    public var retryExchange = "liveline.retry"
    /// Exchange every dead letter goes through (fanout).
    public var deadExchange = "liveline.dead"
    /// The dead-letter queue on-call inspects and replays.
    public var deadQueue = "liveline.dead"
    /// Redeliveries a work queue allows before dead-lettering a message (reason `delivery_limit`).
    public var deliveryLimit: Int64 = 10
    /// Retry tiers: a job waits `delay` in the tier's queue, then returns to the send queue.
    public var retryTiers: [RetryTier] = RetryTier.defaults

    /// A retry queue whose messages expire after `delay` back into the push exchange.
    public struct RetryTier: Sendable, Hashable {
        public var name: String
        public var delay: Duration

        public init(name: String, delay: Duration) {
            self.name = name
            self.delay = delay
        }

        /// 5 s, 30 s, 2 min, 10 min: about 12.5 minutes of retrying before `retries-exhausted`.
        public static let defaults = [
            RetryTier(name: "5s", delay: .seconds(5)),
            RetryTier(name: "30s", delay: .seconds(30)),
            RetryTier(name: "2m", delay: .seconds(120)),
            RetryTier(name: "10m", delay: .seconds(600)),
        ]
    }

    public init() {}

    /// Every exchange and queue named under `prefix` instead of `liveline`
    /// (`<prefix>.events`, `<prefix>.translate`, …, `<prefix>.retry.<tier>`), so runs that
    /// share a broker never meet: tests, benchmarks, the quickstart.
    public init(prefix: String, retryTiers: [RetryTier] = RetryTier.defaults) {
        eventsExchange = "\(prefix).events"
        translateQueue = "\(prefix).translate"
        pushExchange = "\(prefix).push"
        sendQueue = "\(prefix).send"
        retryExchange = "\(prefix).retry"
        deadExchange = "\(prefix).dead"
        deadQueue = "\(prefix).dead"
        self.retryTiers = retryTiers
    }

    /// The queue name of a retry tier: under the retry exchange's name, so a prefixed
    /// topology's tiers are its own.
    public func retryQueue(_ tier: RetryTier) -> String { "\(retryExchange).\(tier.name)" }

    /// The routing key retried jobs carry when they come back to the push exchange.
    public static let retriedRoutingKey = "retry"

    private var workQueueArguments: AMQPTable {
        [
            "x-queue-type": "quorum",
            "x-delivery-limit": .int(deliveryLimit),
            "x-dead-letter-exchange": .string(deadExchange),
            "x-dead-letter-strategy": "at-least-once",
            "x-overflow": "reject-publish",
        ]
    }

    /// Everything to declare.
    public var amqp: AMQPTopology {
        var queues = [
            AMQPTopology.Queue(translateQueue, arguments: workQueueArguments),
            AMQPTopology.Queue(sendQueue, arguments: workQueueArguments),
            // The DLQ has no delivery limit and no DLX: it is the end of the line, and a
            // message in it must stay until on-call replays or purges it.
            AMQPTopology.Queue(deadQueue, arguments: ["x-queue-type": "quorum"]),
        ]
        var bindings = [
            AMQPTopology.Binding(queue: translateQueue, exchange: eventsExchange, routingKey: "#"),
            AMQPTopology.Binding(queue: sendQueue, exchange: pushExchange, routingKey: "#"),
            AMQPTopology.Binding(queue: deadQueue, exchange: deadExchange, routingKey: ""),
        ]
        for tier in retryTiers {
            var arguments = workQueueArguments
            arguments["x-message-ttl"] = .int(Int64(tier.delay.components.seconds * 1000))
            arguments["x-dead-letter-exchange"] = .string(pushExchange)
            arguments["x-dead-letter-routing-key"] = .string(Self.retriedRoutingKey)
            queues.append(AMQPTopology.Queue(retryQueue(tier), arguments: arguments))
            bindings.append(AMQPTopology.Binding(queue: retryQueue(tier), exchange: retryExchange, routingKey: tier.name))
        }
        return AMQPTopology(
            exchanges: [
                .init(eventsExchange, kind: .topic),
                .init(pushExchange, kind: .topic),
                .init(retryExchange, kind: .direct),
                .init(deadExchange, kind: .fanout),
            ],
            queues: queues,
            bindings: bindings
        )
    }
}
