import LivelineAMQP

/// The broker holds a stage laid out for another shard count than the worker's settings.
public struct ShardCountMismatch: Error, CustomStringConvertible {
    /// The setting that gives the stage's shard count (`liveline.send.shards`).
    public var setting: String
    public var configured: Int
    public var onBroker: Int
    public var stage: String

    public var description: String {
        "\(setting) is \(configured), but the broker's \(stage) has \(onBroker) shard(s) (\(stage).0of\(onBroker)): "
            + "set \(setting) to \(onBroker), or reshard the broker first (docs/SCALING.md, Resharding)"
    }
}

extension LivelineTopology {
    /// Refuses, before anything is declared or consumed, a broker whose translate or send
    /// stage has shards of another count than this topology's: a worker that consumed a
    /// layout it does not route by would break per-activity order. A fresh broker, or one
    /// laid out for this topology, passes.
    ///
    /// - Parameter settings: the setting that names each stage's count, for the error
    ///   (`translate.shards`, `send.shards` by default).
    public func checkShardCounts(
        on connection: AMQPConnection, settings: (translate: String, send: String) = ("liveline.translate.shards", "liveline.send.shards")
    ) async throws {
        for (stage, setting) in [(translate, settings.translate), (send, settings.send)] {
            for count in 1...Self.maximumShards where count != stage.shards {
                let other = Stage(name: stage.name, shards: count)
                guard try await Self.exists(queue: other.queue(0), on: connection) else { continue }
                throw ShardCountMismatch(setting: setting, configured: stage.shards, onBroker: count, stage: stage.name)
            }
        }
    }

    private static func exists(queue: String, on connection: AMQPConnection) async throws -> Bool {
        do {
            _ = try await connection.messageCount(queue: queue)
            return true
        } catch let error as AMQPError where error.replyCode == .notFound {
            return false
        }
    }
}
