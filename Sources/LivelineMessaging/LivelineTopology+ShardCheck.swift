import LivelineAMQP

// Tests: Tests/LivelineServicesTests/ShardedTranslatorTests.swift

/// The broker holds a stage laid out for another shard count than the worker's settings.
public struct ShardCountMismatch: Error, CustomStringConvertible {
    /// The setting that gives the stage's shard count (`liveline.send.shards`).
    public var setting: String
    public var configured: Int
    public var onBroker: Int
    public var stage: String

    public var description: String {
        "\(setting) is \(configured), but the broker's \(stage) has \(onBroker) shard(s) (\(stage).0of\(onBroker)): "
            + "set \(setting) to \(onBroker), or reshard with `liveline reshard` first (docs/SCALING.md)"
    }
}

extension LivelineTopology {
    /// The setting that names each stage's shard count.
    public static let shardSettings = (translate: "liveline.translate.shards", send: "liveline.send.shards")

    /// Refuses, before anything is declared or consumed, a broker whose translate or send
    /// stage is laid out for another shard count and not for this topology's: a worker that
    /// consumed a layout it does not route by would break per-activity order. A fresh broker,
    /// one laid out for this topology, and one being resharded to it pass.
    public func checkShardCounts(on connection: AMQPConnection) async throws {
        for (stage, setting) in [(translate, Self.shardSettings.translate), (send, Self.shardSettings.send)] {
            // The usual case in one look; the others only on a fresh or mismatched broker.
            if try await Self.exists(queue: stage.queue(0), on: connection) { continue }
            let counts = try await Self.shardCounts(of: stage.name, on: connection)
            guard let other = counts.first(where: { $0 != stage.shards }), !counts.contains(stage.shards) else { continue }
            throw ShardCountMismatch(setting: setting, configured: stage.shards, onBroker: other, stage: stage.name)
        }
    }

    /// The shard counts the broker has a layout of for the stage named `stage`: one, or two
    /// while it is resharded, or none on a fresh broker. Each count is known by its first
    /// shard's queue.
    public static func shardCounts(of stage: String, on connection: AMQPConnection) async throws -> [Int] {
        var counts: [Int] = []
        for count in 1...maximumShards where try await exists(queue: Stage(name: stage, shards: count).queue(0), on: connection) {
            counts.append(count)
        }
        return counts
    }

    /// Whether the broker has the queue (a passive declare). A queue exclusive to another
    /// connection, such as a held shard lease, exists though the broker refuses a look at it.
    public static func exists(queue: String, on connection: AMQPConnection) async throws -> Bool {
        do {
            _ = try await connection.messageCount(queue: queue)
            return true
        } catch let error as AMQPError where error.replyCode == .resourceLocked {
            return true
        } catch let error as AMQPError where error.replyCode == .notFound {
            return false
        }
    }
}
