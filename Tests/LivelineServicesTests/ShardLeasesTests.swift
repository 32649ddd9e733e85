import Foundation
import LivelineAMQP
import LivelineMessaging
@testable import LivelineServices
import LivelineTestSupport
import MetricsTestKit
import Synchronization
import Testing

// The leases' handovers and resharding, with translators: ShardedTranslatorTests.swift.

@Suite(.timeLimit(.minutes(2)))
struct ShardLeasesTests {
    /// The balance counts the workers every tick, a `queue.declare` round trip each. On a
    /// connection of its own the counts leave the consumer's held bound alone: with 10,000
    /// bytes allowed and 60 messages of 1,000 bytes unacknowledged, the shard's work gets 10 or
    /// 11 of them through some 20 ticks, no reply on the consuming connection reads past them,
    /// and the rest arrive, in order, as it acks. (Counted on the consuming connection, each
    /// reply would make rabbitmq-c read every delivery ahead of it and keep it in its memory.)
    @Test func countingOnItsOwnConnectionKeepsTheConsumersHeldBound() async throws {
        try await withBroker {
            let topology = LivelineTopology(prefix: Broker.unique("leases"))
            var configuration = try Broker.configuration()
            configuration.maximumHeldBytes = 10_000
            let consuming = try await AMQPConnection.connect(configuration, logger: Broker.logger)
            let balance = try await Broker.connect(name: "leases-balance")
            try await balance.declare(topology.amqp)
            let body = String(repeating: "x", count: 990)
            try await balance.publish(contentsOf: (0..<60).map { message(String(format: "%09d ", $0) + body, to: topology.send.queue(0)) })

            let taken = Mutex<[AMQPDelivery]>([])
            let leases = ShardLeases(
                stage: topology.send, connection: consuming, balance: balance, prefetch: 500, interval: .milliseconds(50),
                logger: Broker.logger, metricsFactory: TestMetrics())
            let running = Task {
                try await leases.run { _, consumer in
                    for try await delivery in consumer { taken.withLock { $0.append(delivery) } }
                }
            }
            try await eventually("the shard's work took what the bound allows") { taken.withLock { $0.count } >= 10 }
            try await Task.sleep(for: .seconds(1))
            let held = taken.withLock { $0.count }
            #expect((10...11).contains(held), "took \(held) of 60 with 10,000 bytes allowed")
            #expect(consuming.repliesReadAhead == 0, "a count on the consuming connection read past the bound")

            var acked = 0
            try await eventually("all 60, as they are acknowledged") {
                let now = taken.withLock { $0 }
                for delivery in now[acked...] { delivery.ack() }
                acked = now.count
                return acked == 60
            }
            #expect(taken.withLock { $0 }.map { Int(String(decoding: $0.body.prefix(9), as: UTF8.self))! } == Array(0..<60))

            running.cancel()
            _ = await running.result
            await consuming.close()
            for queue in topology.amqp.queues { try await balance.delete(queue: queue.name) }
            for exchange in topology.amqp.exchanges { try await balance.delete(exchange: exchange.name) }
            await balance.close()
        }
    }
}
