import Foundation
import LivelineAMQP
import LivelineTestSupport
import Testing

/// A broker that answers everything but never confirms, against the real RabbitMQ: a proxy in
/// front of it passes every frame except the broker's `basic.ack`, so heartbeats and RPCs work
/// and publisher confirms never arrive.
@Suite(.timeLimit(.minutes(2)))
struct ConfirmTimeoutTests {
    @Test func aPublishTheBrokerNeverConfirmsIsSentAgainOnTheNextBroker() async throws {
        try await withBroker {
            let real = try AMQPConfiguration(url: Broker.url)
            let proxy = try FrameDroppingProxy(upstreamPort: real.port, dropping: FrameDroppingProxy.basicAck)
            defer { proxy.close() }
            var configuration = try Broker.configuration(heartbeat: .seconds(2))
            configuration.brokers = [.init(host: "127.0.0.1", port: proxy.port), real.brokers[0]]
            configuration.confirmTimeout = .seconds(2)
            let connection = try await AMQPConnection.connect(configuration, logger: Broker.logger)
            let queue = Broker.unique("unconfirmed")
            try await connection.declare(AMQPTopology(queues: [.init(queue, arguments: quorum)]))
            #expect(proxy.dropped == 0, "declaring needs no confirm")

            let started = ContinuousClock.now
            // Without the timeout the publish would wait for ever: closing the connection
            // after 20 s fails it instead, and the test with it.
            let deadline = Task {
                try await Task.sleep(for: .seconds(20))
                await connection.close()
            }
            try await connection.publish(message("confirmed the second time", to: queue))
            deadline.cancel()
            let waited = ContinuousClock.now - started

            #expect(proxy.dropped >= 1, "the broker confirmed the first copy; the proxy kept it back")
            #expect(waited >= .seconds(2), "published after \(waited): sooner than the confirm timeout")
            #expect(waited < .seconds(10), "published after \(waited)")
            #expect(connection.reconnectCount == 1)
            // The broker kept the first copy and the resend: at least once, as documented.
            #expect(try await connection.messageCount(queue: queue) == 2)
            try await connection.delete(queue: queue)
            await connection.close()
        }
    }
}
