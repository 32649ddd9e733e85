import Foundation
import LivelineAMQP
import LivelineTestSupport
import Testing

/// A consumer cancelled while its broker stops answering (cut off in a partition): the
/// cancel's RPC times out and takes the connection with it. The consumer's deliveries must
/// still end, since whoever reads them waits for that end to hand its shard over.
@Suite(.timeLimit(.minutes(2)))
struct ConsumerCancelTests {
    @Test func aCancelLostWithItsConnectionStillEndsTheDeliveries() async throws {
        try await withBroker {
            let real = try AMQPConfiguration(url: Broker.url)
            let proxy = try FrameDroppingProxy(upstreamPort: real.port, dropping: FrameDroppingProxy.basicCancelOk)
            defer { proxy.close() }
            var configuration = try Broker.configuration(heartbeat: .seconds(2))
            configuration.brokers = [.init(host: "127.0.0.1", port: proxy.port), real.brokers[0]]
            // Two seconds bound each request on this connection, so the lost cancel-ok costs the
            // test little. The queue is declared, counted and deleted on a connection of its own
            // with the default bound: a quorum queue's declare goes through its Raft log, and on a
            // CI machine running every suite at once one took longer than two seconds.
            configuration.connectTimeout = .seconds(2)
            let admin = try await Broker.connect()
            let queue = Broker.unique("cancel-lost")
            try await admin.declare(AMQPTopology(queues: [.init(queue, arguments: ["x-queue-type": "quorum"])]))
            try await admin.publish(AMQPMessage(exchange: "", routingKey: queue, body: Data("held".utf8)))
            let connection = try await AMQPConnection.connect(configuration, logger: Broker.logger)

            let consumer = try await connection.consume(queue: queue, prefetch: 10)
            var deliveries = consumer.makeAsyncIterator()
            #expect(try await deliveries.next() != nil, "the message was delivered")
            await consumer.cancel()
            // Without the end, this loop would wait for ever and the time limit would fail it.
            var more = 0
            while try await deliveries.next() != nil { more += 1 }
            #expect(more == 0)
            #expect(proxy.dropped >= 1, "the broker's cancel-ok was kept back")
            try await eventually("reconnected to the real broker") { connection.reconnectCount >= 1 }
            // Not subscribed again after the reconnect: the message waits for the next consumer.
            try await eventually("the unacked message is back in the queue, with nobody consuming it") {
                let consumers = try? await admin.consumerCount(queue: queue)
                let messages = try? await admin.messageCount(queue: queue)
                return consumers == 0 && messages == 1
            }
            await connection.close()
            try await admin.delete(queue: queue)
            await admin.close()
        }
    }
}
