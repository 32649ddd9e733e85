import LivelineAMQP

// Tests: Tests/LivelineServicesTests/ShardedTranslatorTests.swift, scripts/faults

/// Changes one stage's shard count on a live broker without losing a message or breaking
/// one activity's order (`liveline reshard`).
///
/// Order holds because no message of the new layout is consumed before every message of the
/// old one was: workers started with the new count wait until the old shards are gone
/// (``LivelineTopology/shardCounts(of:on:)``), and the old shards are deleted only once they
/// have stayed empty for ``quiet``.
///
/// 1. Declares the new layout beside the old one. For the translate stage it also moves the
///    events exchange's binding from the old consistent-hash exchange to the new one, so new
///    events go to the new shards; the workers of the old count drain the old ones.
/// 2. Waits until every old shard (and, for the send stage, every retry tier, whose jobs
///    return to their old shard) has been empty for ``quiet``. Meanwhile the operator rolls
///    the workers to the new count: for the send stage the translators first, so new jobs go
///    to the new shards, then the senders.
/// 3. Deletes the old shards; the broker cancels the old count's consumers, and those
///    workers stop with an error naming the queue.
/// 4. Waits until those workers have let go of every old shard's lease. A worker does so
///    only once it has finished and published everything it had received: "empty" counts
///    only the messages no worker holds yet, and a worker's prefetch may still hold a
///    backlog. Then it deletes the marker, which is what the new count's workers wait for.
public struct Resharding: Sendable {
    public enum StageKind: String, Sendable, CaseIterable {
        case translate, send
    }

    /// Where a reshard stands, for a progress line.
    public struct Progress: Sendable {
        /// Messages still waiting in the old shards (and retry tiers, for the send stage).
        public var waiting: Int
        /// How long they have all been empty.
        public var emptyFor: Duration
        /// Old shards whose workers still hold their lease, finishing what they received,
        /// once the old shards are deleted.
        public var leasesHeld = 0
    }

    /// What a reshard did.
    public struct Summary: Sendable, Codable, Equatable {
        public var stage: String
        public var from: Int
        public var to: Int
        /// The old shard queues deleted.
        public var deleted: [String]
    }

    public let topology: LivelineTopology
    public let stage: StageKind
    public let shards: Int
    /// How long the old shards must stay empty before they are deleted.
    public var quiet: Duration = .seconds(5)
    /// How often the old shards are looked at.
    public var interval: Duration = .seconds(1)

    /// - Parameters:
    ///   - topology: the deployment's names and retry tiers; its shard counts are ignored,
    ///     the broker's are used.
    ///   - stage: the stage to reshard.
    ///   - shards: its new shard count.
    public init(topology: LivelineTopology, stage: StageKind, to shards: Int) {
        self.topology = topology
        self.stage = stage
        self.shards = shards
    }

    /// Runs the reshard; `progress` is told at every look. Throws ``ReshardingError`` when
    /// the broker has no layout of the stage or the count is out of range.
    public func run(on connection: AMQPConnection, progress: @Sendable (Progress) -> Void = { _ in }) async throws -> Summary {
        guard (1...LivelineTopology.maximumShards).contains(shards) else {
            throw ReshardingError("the new shard count must be 1 to \(LivelineTopology.maximumShards), not \(shards)")
        }
        let stageName = stage == .translate ? topology.translate.name : topology.send.name
        let otherName = stage == .translate ? topology.send.name : topology.translate.name
        let counts = try await LivelineTopology.shardCounts(of: stageName, on: connection)
        let otherCounts = try await LivelineTopology.shardCounts(of: otherName, on: connection)
        guard !counts.isEmpty, !otherCounts.isEmpty else {
            throw ReshardingError("the broker has no shards of \(counts.isEmpty ? stageName : otherName): start the workers first")
        }
        guard otherCounts.count == 1 else {
            throw ReshardingError("\(otherName) is being resharded: let that finish first")
        }
        var target = topology
        target.translate.shards = stage == .translate ? shards : otherCounts[0]
        target.send.shards = stage == .send ? shards : otherCounts[0]
        let old = counts.filter { $0 != shards }
        let from = old.first ?? shards
        try await connection.declare(target.amqp)
        // Workers look for the stage's other layouts only while this marker is there.
        let marker = LivelineTopology.Stage(name: stageName, shards: shards).reshardingMarker
        try await connection.declare(AMQPTopology(queues: [.init(marker, arguments: ["x-queue-type": "quorum"])]))
        let oldStages = old.map { LivelineTopology.Stage(name: stageName, shards: $0) }
        let oldBindings = stage == .translate
            ? oldStages.map { AMQPTopology.ExchangeBinding(destination: $0.hashExchange, source: topology.eventsExchange, routingKey: "#") }
            : []
        var watched = oldStages.flatMap(\.queues)
        if stage == .send { watched += topology.retryTiers.map(topology.retryQueue) }

        var emptySince: ContinuousClock.Instant?
        while !oldStages.isEmpty {
            // Again at every look: a worker of the old count that reconnects declares its
            // topology again, binding the old shards back.
            for binding in oldBindings { try await connection.unbind(binding) }
            var waiting = 0
            for queue in watched { waiting += try await connection.messageCount(queue: queue) }
            let now = ContinuousClock.now
            emptySince = waiting == 0 ? (emptySince ?? now) : nil
            let emptyFor = emptySince.map { now - $0 } ?? .zero
            progress(Progress(waiting: waiting, emptyFor: emptyFor))
            if emptyFor >= quiet { break }
            try await Task.sleep(for: interval)
        }
        var deleted: [String] = []
        for old in oldStages {
            for queue in old.queues {
                _ = try await connection.delete(queue: queue)
                deleted.append(queue)
            }
            if stage == .translate { try await connection.delete(exchange: old.hashExchange) }
        }
        while case let held = try await Self.leasesHeld(oldStages, on: connection), held > 0 {
            progress(Progress(waiting: 0, emptyFor: quiet, leasesHeld: held))
            try await Task.sleep(for: interval)
        }
        _ = try await connection.delete(queue: marker)
        return Summary(stage: stageName, from: from, to: shards, deleted: deleted)
    }

    /// How many of the stages' shard leases a worker still holds: a lease is a queue that lives
    /// as long as its holder's connection.
    static func leasesHeld(_ stages: [LivelineTopology.Stage], on connection: AMQPConnection) async throws -> Int {
        var held = 0
        for stage in stages {
            for shard in 0..<stage.shards where try await LivelineTopology.exists(queue: stage.lease(shard), on: connection) {
                held += 1
            }
        }
        return held
    }
}

/// A reshard that cannot be done as asked.
public struct ReshardingError: Error, CustomStringConvertible {
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}
