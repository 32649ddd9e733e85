import LivelineAMQP

// Tests: Tests/LivelineAMQPTests/ConfigurationTests.swift, Tests/LivelineAMQPTests/AMQPIntegrationTests.swift

/// Liveline's broker topology: names, queue arguments, and how messages flow between them.
///
/// ```
/// producers ─▶ liveline.events (topic, <domain>.<type>) ─▶ liveline.translate.of<N> (consistent hash
///              on the activity) ─▶ liveline.translate.<i>of<N> (N quorum queues)
/// translator ─▶ liveline.push (topic, <i>of<M>) ─▶ liveline.send.<i>of<M> (M quorum queues)
/// sender ─▶ liveline.retry (topic, <tier>.<i>of<M>) ─▶ liveline.retry.<tier> (TTL) ─▶ liveline.push,
///           back to the job's own send shard
/// any work queue (rejected / over delivery limit) and explicit dead letters
///          ─▶ liveline.dead (fanout) ─▶ liveline.dead (quorum, the DLQ)
/// translator, sender, dlq replay ─▶ liveline.outcomes (topic, <domain>.<outcome>) ─▶ the
///          producers' own queues, for the domains that ask (``EventOutcome``)
/// ```
///
/// **Shards.** Each stage is ``Stage/shards`` queues with a single active consumer, so one
/// activity's messages stay in order whichever worker holds its shard. Events are spread by
/// the broker's consistent-hash exchange on the ``activityHeader`` that producers set, so
/// producers need not know the shard count. Jobs are spread by the translator itself
/// (``sendShard(lane:)``), because it bundles the jobs of a batch that go to one shard into
/// one message and so must know the shard before it publishes. A shard queue's name carries
/// the stage's shard count (`liveline.send.3of8`), so a broker laid out for another count is
/// told apart at start instead of being consumed wrongly.
///
/// Work queues are quorum queues with a delivery limit, a dead-letter exchange and
/// at-least-once dead-lettering (which RabbitMQ allows only with `overflow: reject-publish`),
/// so a message the broker gives up on is moved, never dropped.
public struct LivelineTopology: Sendable {
    /// Exchange domain services publish CloudEvents to, routing key `<domain>.<type>`.
    public var eventsExchange = "liveline.events"
    /// The translate stage: its shard queues consumed by translators.
    public var translate = Stage(name: "liveline.translate", shards: 1)
    /// Exchange translators publish push jobs to, routing key the send shard's key.
    public var pushExchange = "liveline.push"
    /// The send stage: its shard queues consumed by senders.
    public var send = Stage(name: "liveline.send", shards: 1)
    /// Exchange the sender publishes retries to, routing key `<tier>.<send shard key>`.
    public var retryExchange = "liveline.retry"
    /// Exchange every dead letter goes through (fanout).
    public var deadExchange = "liveline.dead"
    /// The dead-letter queue on-call inspects and replays.
    public var deadQueue = "liveline.dead"
    /// Exchange outcomes go to, routing key `<domain>.<outcome>`; producers bind their own
    /// queues to it, so Liveline declares no queue here.
    public var outcomesExchange = "liveline.outcomes"
    /// Redeliveries a work queue allows before dead-lettering a message (reason `delivery_limit`).
    public var deliveryLimit: Int64 = 10
    /// Retry tiers: a job waits `delay` in the tier's queue, then returns to its send shard.
    public var retryTiers: [RetryTier] = RetryTier.defaults

    /// The most shards a stage may have: every shard is a quorum queue (a Raft group) on
    /// three nodes, and a worker holds a consumer channel per shard.
    public static let maximumShards = 64

    /// The AMQP header that carries an event's activity id (its CloudEvents `subject`): the
    /// translate stage's consistent-hash exchange hashes it, so one activity's events land in
    /// one shard. An event without it is hashed as empty, so all such events share a shard:
    /// still in order, but not spread.
    public static let activityHeader = "cloudEvents:subject"

    /// One stage of work: `shards` quorum queues named `<name>.<index>of<shards>`.
    public struct Stage: Sendable, Hashable {
        /// The stage's name, the prefix of its queues (`liveline.translate`).
        public var name: String
        /// How many shard queues the stage has (1 to ``LivelineTopology/maximumShards``).
        public var shards: Int

        public init(name: String, shards: Int) {
            self.name = name
            self.shards = shards
        }

        /// The key of shard `index`: its queue's suffix and, for the send stage, the routing key.
        public func key(_ index: Int) -> String { "\(index)of\(shards)" }

        /// The queue of shard `index`.
        public func queue(_ index: Int) -> String { "\(name).\(key(index))" }

        /// Every shard queue, in index order.
        public var queues: [String] { (0..<shards).map(queue) }

        /// The lease of shard `index`: an exclusive queue that the worker holding the shard
        /// declares on its consumer connection, so the broker frees it when that connection dies.
        public func lease(_ index: Int) -> String { "\(queue(index)).lease" }

        /// The queue every live worker of the stage subscribes to: its consumer count is the
        /// number of workers the shards are shared among.
        public var workersQueue: String { "\(name).workers" }

        /// The queue a worker holding fewer shards than its share subscribes to, so that
        /// workers holding more give one up.
        public var hungryQueue: String { "\(name).hungry" }

        /// The queue `liveline reshard` keeps while it reshards the stage: a worker looks for
        /// this one queue at start, and for the stage's other layouts only when it is there.
        public var reshardingMarker: String { "\(name).resharding" }

        /// The translate stage's consistent-hash exchange, one per shard count.
        public var hashExchange: String { "\(name).of\(shards)" }

        /// Whether `queue` is a shard of this stage, for any shard count.
        public func isShard(_ queue: String) -> Bool {
            guard queue.hasPrefix(name + "."), case let key = queue.dropFirst(name.count + 1),
                let of = key.range(of: "of"), let index = Int(key[..<of.lowerBound]),
                let count = Int(key[of.upperBound...])
            else { return false }
            return index >= 0 && index < count
        }
    }

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

    /// The default names, with one shard per stage unless told otherwise.
    public init(translateShards: Int = 1, sendShards: Int = 1) {
        translate.shards = translateShards
        send.shards = sendShards
    }

    /// Every exchange and queue named under `prefix` instead of `liveline`
    /// (`<prefix>.events`, `<prefix>.translate.0of1`, …, `<prefix>.retry.<tier>`), so runs that
    /// share a broker never meet: tests, benchmarks, the quickstart.
    public init(
        prefix: String, retryTiers: [RetryTier] = RetryTier.defaults, translateShards: Int = 1, sendShards: Int = 1
    ) {
        eventsExchange = "\(prefix).events"
        translate = Stage(name: "\(prefix).translate", shards: translateShards)
        pushExchange = "\(prefix).push"
        send = Stage(name: "\(prefix).send", shards: sendShards)
        retryExchange = "\(prefix).retry"
        deadExchange = "\(prefix).dead"
        deadQueue = "\(prefix).dead"
        outcomesExchange = "\(prefix).outcomes"
        self.retryTiers = retryTiers
    }

    /// The translate stage's shard queues.
    public var translateQueues: [String] { translate.queues }
    /// The send stage's shard queues.
    public var sendQueues: [String] { send.queues }

    /// The queue name of a retry tier: under the retry exchange's name, so a prefixed
    /// topology's tiers are its own.
    public func retryQueue(_ tier: RetryTier) -> String { "\(retryExchange).\(tier.name)" }

    /// The send shard of a job's lane (``LivelineCore/PushTarget/laneKey(activity:)``): one
    /// lane, one activity's jobs for one target, always lands in one shard, while a game's
    /// fan-out spreads over all of them. FNV-1a, so every translator agrees without asking.
    public func sendShard(lane: String) -> Int {
        guard send.shards > 1 else { return 0 }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in lane.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return Int(hash % UInt64(send.shards))
    }

    /// The routing key of a job published to send shard `index`.
    public func sendRoutingKey(shard index: Int) -> String { send.key(index) }

    /// The routing key of a retry of a job in send shard `index`: the tier picks the retry
    /// queue, and the shard key, kept when the job expires back into the push exchange,
    /// returns it to its shard.
    public func retryRoutingKey(tier: RetryTier, shard index: Int) -> String { "\(tier.name).\(send.key(index))" }

    /// A quorum queue whose leader goes to the node leading the fewest: declared by workers
    /// that all connect to the first node they can reach, every leader would otherwise sit on
    /// that node ("client-local", the default), and one node would carry every stage.
    private static let quorum: AMQPTable = ["x-queue-type": "quorum", "x-queue-leader-locator": "balanced"]

    private var workQueueArguments: AMQPTable {
        var arguments = Self.quorum
        arguments["x-delivery-limit"] = .int(deliveryLimit)
        arguments["x-dead-letter-exchange"] = .string(deadExchange)
        arguments["x-dead-letter-strategy"] = "at-least-once"
        arguments["x-overflow"] = "reject-publish"
        return arguments
    }

    private var shardArguments: AMQPTable {
        var arguments = workQueueArguments
        // One consumer at a time takes a shard's messages, whoever else subscribes: the
        // broker's own guard of per-activity order, under the workers' shard leases.
        arguments["x-single-active-consumer"] = .bool(true)
        return arguments
    }

    /// Everything to declare.
    public var amqp: AMQPTopology {
        var queues = translate.queues.map { AMQPTopology.Queue($0, arguments: shardArguments) }
            + send.queues.map { AMQPTopology.Queue($0, arguments: shardArguments) }
        // The DLQ has no delivery limit and no DLX: it is the end of the line, and a
        // message in it must stay until on-call replays or purges it.
        queues.append(AMQPTopology.Queue(deadQueue, arguments: Self.quorum))
        // Nothing is published to these: workers subscribe to be counted.
        for stage in [translate, send] {
            queues.append(AMQPTopology.Queue(stage.workersQueue, arguments: Self.quorum))
            queues.append(AMQPTopology.Queue(stage.hungryQueue, arguments: Self.quorum))
        }
        // The consistent-hash exchange's binding key is a weight: equal weights, equal shares.
        var bindings = translate.queues.map { AMQPTopology.Binding(queue: $0, exchange: translate.hashExchange, routingKey: "1") }
        bindings += (0..<send.shards).map {
            AMQPTopology.Binding(queue: send.queue($0), exchange: pushExchange, routingKey: "#.\(send.key($0))")
        }
        bindings.append(AMQPTopology.Binding(queue: deadQueue, exchange: deadExchange, routingKey: ""))
        for tier in retryTiers {
            var arguments = workQueueArguments
            arguments["x-message-ttl"] = .int(Int64(tier.delay.components.seconds * 1000))
            // No dead-letter routing key: an expired retry keeps its own, which names its shard.
            arguments["x-dead-letter-exchange"] = .string(pushExchange)
            queues.append(AMQPTopology.Queue(retryQueue(tier), arguments: arguments))
            bindings.append(AMQPTopology.Binding(queue: retryQueue(tier), exchange: retryExchange, routingKey: "\(tier.name).#"))
        }
        return AMQPTopology(
            exchanges: [
                .init(eventsExchange, kind: .topic),
                .init(translate.hashExchange, kind: .consistentHash, arguments: ["hash-header": .string(Self.activityHeader)]),
                .init(pushExchange, kind: .topic),
                .init(retryExchange, kind: .topic),
                .init(deadExchange, kind: .fanout),
                .init(outcomesExchange, kind: .topic),
            ],
            queues: queues,
            bindings: bindings,
            exchangeBindings: [.init(destination: translate.hashExchange, source: eventsExchange, routingKey: "#")]
        )
    }
}
