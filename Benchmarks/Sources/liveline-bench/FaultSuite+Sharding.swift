import Foundation
import LivelineBenchSupport
import LivelineMessaging

// Tests: scripts/faults

/// The cases about shards: workers dying, joining and losing their broker node while they
/// share the stages' shards.
extension FaultCase {
    /// Goal after goal of the game: a translator killed as goal 2 is published, and the
    /// sender holding the most shards killed once a third of the devices have goal 4, so
    /// the bundles it held unacked go to the sender that takes its shards.
    static func killDuringFanOut(_ context: FaultContext) async throws {
        guard let fanOut = context.fanOut else { throw BenchError("the fan-out case needs its game") }
        let pipeline = context.pipeline
        for goal in 0..<fanOut.goals {
            try await fanOut.publish(goal: goal, amqpURL: context.amqpURL, topology: pipeline.topology)
            if goal == 2 {
                let (translator, shards) = try await context.workerHoldingMostShards("translator")
                await translator.kill()
                context.note("killed \(translator.name), holding \(shards) translate shard(s), as goal 2 was published")
                context.allowDuplicates(translatorPrefetch, because: "the killed translator's unacked events")
                context.allowFanOutDuplicates(fanOut.devices, because: "a goal the killed translator took, fanned out again")
                try await pipeline.startWorker("translator")
            } else if goal == 4 {
                let deadline = ContinuousClock.now + .seconds(60)
                var reached = 0
                while reached < fanOut.devices / 3, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(5))
                    reached = fanOut.received(goal: goal, at: pipeline.simulator)
                }
                let (sender, shards) = try await context.workerHoldingMostShards("sender")
                await sender.kill()
                context.note("killed \(sender.name), holding \(shards) send shard(s), when \(reached) of \(fanOut.devices) "
                    + "devices had goal 4")
                context.allowDuplicates(senderPrefetch, because: "the killed sender's unacked deliveries")
                // Bundles are acked once every job in them has its outcome: what it held
                // unacked is at most the goals still fanning out, two at a second apart.
                context.allowFanOutDuplicates(2 * fanOut.devices, because: "the killed sender's unacked bundles")
                try await pipeline.startWorker("sender")
            }
            try await Task.sleep(for: .seconds(1))
        }
        try await fanOut.waitForLastGoal(at: pipeline.simulator, timeout: .seconds(120))
    }

    /// After the disturbance every shard of each stage is held, and spread over its live
    /// workers within one of an even share.
    static func shardsShared(_ context: FaultContext) async throws -> (passed: Bool, notes: [String]) {
        var passed = true
        var notes: [String] = []
        let topology = context.pipeline.topology
        for (role, shards) in [("translator", topology.translate.shards), ("sender", topology.send.shards)] {
            let live = context.pipeline.workers.filter { $0.role == role && $0.process.isRunning }
            var held: [String] = []
            var counts: [Int] = []
            var handovers = 0.0
            for worker in live {
                let values = try await worker.metrics(["liveline_shards_held", "liveline_shard_handovers_total"])
                counts.append(Int(values[0]))
                handovers += values[1]
                held.append("\(worker.name) \(Int(values[0]))")
            }
            let workers = max(live.count, 1)
            let even = (shards / workers)...((shards + workers - 1) / workers)
            let spread = counts.reduce(0, +) == shards && counts.allSatisfy(even.contains)
            passed = passed && spread
            notes.append("\(role) shards held: \(held.joined(separator: ", ")) of \(shards)"
                + " (\(Int(handovers)) handover(s) by the live ones)" + (spread ? "" : ": FAIL, not all held or not spread"))
        }
        return (passed, notes)
    }

    /// Net ticktime is how long the Erlang distribution waits before it calls a silent
    /// node down; pause_minority acts only then. Cuts node 1, which workers are connected to
    /// and which leads some shards, off for twice that and five seconds more,
    /// checks that it paused (its `rabbit` application stopped), then heals: the node starts
    /// again, rejoins and is given its share of leaders back.
    static func partitionPastTicktime(_ context: FaultContext) async throws {
        guard let text = try await context.brokerOutput("ticktime"),
            let ticktime = Double(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else { throw BenchError("the cluster's control script did not tell its net_ticktime") }
        let cut = 2 * ticktime + 5
        let rounds = context.load.total > 20_000 ? 2 : 1
        for round in 1...rounds {
            context.allowDuplicates(senderPrefetch + translatorPrefetch, because: "round \(round): the node paused")
            // Node 1, which the first and fourth workers connected to: their connections must fail over.
            guard let said = try await context.brokerOutput("partition", "1"),
                let node = said.firstMatch(of: /node ([1-3]) cut off/).map({ String($0.1) })
            else { throw BenchError("the cluster's control script did not cut a node off") }
            let started = ContinuousClock.now
            var pausedAfter: Double?
            while ContinuousClock.now < started + .seconds(cut) {
                if pausedAfter == nil, try await context.brokerOutput("paused", node) != nil {
                    pausedAfter = (ContinuousClock.now - started).seconds
                }
                try await Task.sleep(for: .seconds(1))
            }
            try await context.broker("heal")
            // A node back from a pause leads nothing; rebalancing gives it its share again, once
            // its members of the queues have caught up.
            for _ in 1...12 {
                try await context.broker("rebalance")
                if try await ClusterLeaders.everyNodeLeads(context) { break }
                try await Task.sleep(for: .seconds(5))
            }
            try await ClusterLeaders.note(context, "after the heal and `rabbitmq-queues rebalance quorum`")
            if let pausedAfter {
                context.note(String(format: "round %d: node %@ cut off for %.0f s (net_ticktime %.0f s); pause_minority "
                    + "stopped it after %.0f s; healed, it started again and rejoined", round, node, cut, ticktime, pausedAfter))
            } else {
                context.fail("round \(round): node \(node) was cut off for \(Int(cut)) s, past net_ticktime \(Int(ticktime)) s, "
                    + "and never paused")
            }
        }
    }
}

/// Where the shards' quorum queue leaders are: each node of the cluster should lead its
/// share of each stage, or one node carries the stage's writes however many there are.
enum ClusterLeaders {
    /// Fails the case unless each node leads an even share of each stage's shards, within one.
    static func check(_ context: FaultContext) async throws {
        for (stage, counts) in try await shardLeaders(context) {
            let nodes = ["1", "2", "3"]
            let shards = counts.values.reduce(0, +)
            let even = (shards / nodes.count)...((shards + nodes.count - 1) / nodes.count)
            let text = describe(counts)
            if counts["none"] == nil, nodes.allSatisfy({ even.contains(counts[$0, default: 0]) }) {
                context.note("\(stage) shard leaders: \(text)")
            } else {
                context.fail("\(stage) shard leaders not spread over the nodes: \(text)")
            }
        }
    }

    /// Whether every node leads at least one shard.
    static func everyNodeLeads(_ context: FaultContext) async throws -> Bool {
        let led = try await shardLeaders(context).reduce(into: [String: Int]()) { sum, stage in
            sum.merge(stage.counts, uniquingKeysWith: +)
        }
        return ["1", "2", "3"].allSatisfy { led[$0, default: 0] > 0 }
    }

    /// Notes where the shards' leaders are, `when`.
    static func note(_ context: FaultContext, _ when: String) async throws {
        let text = try await shardLeaders(context).map { "\($0.stage) \(describe($0.counts))" }.joined(separator: "; ")
        context.note("shard leaders \(when): \(text)")
    }

    private static func describe(_ counts: [String: Int]) -> String {
        (["1", "2", "3"].map { "node \($0) \(counts[$0, default: 0])" } + (counts["none"].map { ["\($0) without a leader"] } ?? []))
            .joined(separator: ", ")
    }

    /// Shards led per node ("1"-"3", or "none"), per stage.
    private static func shardLeaders(_ context: FaultContext) async throws -> [(stage: String, counts: [String: Int])] {
        guard let text = try await context.brokerOutput("leaders") else {
            throw BenchError("the cluster's control script did not list the queue leaders")
        }
        var leader: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ")
            if words.count == 2 { leader[String(words[0])] = String(words[1]) }
        }
        let topology = context.pipeline.topology
        return [("translate", topology.translateQueues), ("send", topology.sendQueues)].map { stage, queues in
            var counts: [String: Int] = [:]
            for queue in queues { counts[leader[queue] ?? "none", default: 0] += 1 }
            return (stage, counts)
        }
    }
}
