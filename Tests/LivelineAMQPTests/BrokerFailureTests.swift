import Foundation
import Synchronization
import LivelineAMQP
import LivelineTestSupport
import Testing

/// What happens when the broker goes away, hangs, or speaks TLS. These tests stop or freeze
/// the shared broker, so each runs alone (an exclusive ``BrokerGate``).
@Suite(.timeLimit(.minutes(3)))
struct BrokerFailureTests {
    @Test func brokerRestartMidStreamLosesNoConfirmedMessage() async throws {
        try await withBroker(exclusive: true) {
            let publisher = try await Broker.connect(heartbeat: .seconds(2))
            let consumerConnection = try await Broker.connect(heartbeat: .seconds(2))
            let queue = Broker.unique("restart")
            let topology = AMQPTopology(queues: [.init(queue, arguments: quorum)])
            try await publisher.declare(topology)
            try await consumerConnection.declare(topology)
            let consumer = try await consumerConnection.consume(queue: queue, prefetch: 50)

            // Publish pipelined batches from before the restart until well after it.
            let restarted = Mutex(false)
            let publishing = Task {
                var confirmed: Set<String> = []
                var batchesAfterRestart = 0
                var batch = 0
                while batchesAfterRestart < 20 {
                    let ids = (0..<50).map { "msg-\(batch)-\($0)" }
                    try await publisher.publish(contentsOf: ids.map { message($0, to: queue, id: $0) })
                    confirmed.formUnion(ids)
                    batch += 1
                    if restarted.withLock({ $0 }) { batchesAfterRestart += 1 }
                    try await Task.sleep(for: .milliseconds(10))
                }
                return confirmed
            }
            let seen = Mutex(Set<String>())
            let consuming = Task {
                for try await delivery in consumer {
                    _ = seen.withLock { $0.insert(String(decoding: delivery.body, as: UTF8.self)) }
                    delivery.ack()
                }
            }
            try await Task.sleep(for: .milliseconds(500))
            try await Broker.control("restart")
            restarted.withLock { $0 = true }

            let confirmed = try await publishing.value
            // At-least-once: every confirmed message is consumed (duplicates are allowed).
            try await eventually(timeout: .seconds(60), "every confirmed message is consumed") {
                seen.withLock { confirmed.isSubset(of: $0) }
            }
            consuming.cancel()
            #expect(confirmed.count >= 50 * 30)
            #expect(publisher.reconnectCount >= 1)
            #expect(consumerConnection.reconnectCount >= 1)
            #expect(publisher.state == .connected)
            try await publisher.delete(queue: queue)
            await consumerConnection.close()
            await publisher.close()
        }
    }

    @Test func frozenBrokerIsDetectedWithinAboutTwoHeartbeats() async throws {
        try await withBroker(exclusive: true) {
            let heartbeat = Duration.seconds(2)
            let connection = try await Broker.connect(heartbeat: heartbeat)
            let queue = Broker.unique("frozen")
            try await connection.declare(AMQPTopology(queues: [.init(queue, arguments: quorum)]))

            try await Broker.control("pause")
            let frozenAt = ContinuousClock.now
            do {
                try await eventually(timeout: .seconds(15), "the connection notices the frozen broker") {
                    if case .reconnecting = connection.state { return true }
                    return false
                }
            } catch {
                try await Broker.control("resume")
                throw error
            }
            let detectedAfter = ContinuousClock.now - frozenAt
            try await Broker.control("resume")
            // 2 × heartbeat, plus the poll interval (heartbeat / 4) and scheduling slack.
            #expect(detectedAfter <= heartbeat * 2 + .milliseconds(1500), "detected after \(detectedAfter)")
            #expect(detectedAfter >= heartbeat, "detected after \(detectedAfter): too early to be a heartbeat miss")

            try await eventually(timeout: .seconds(30), "the connection comes back") { connection.state == .connected }
            try await connection.publish(message("after the freeze", to: queue))
            #expect(try await connection.messageCount(queue: queue) == 1)
            try await connection.delete(queue: queue)
            await connection.close()
        }
    }

    @Test func tlsConnectionVerifiesTheBrokerAgainstTheCA() async throws {
        try await withBroker {
            let environment = ProcessInfo.processInfo.environment
            let url = try #require(environment["LIVELINE_TEST_AMQPS_URL"], "scripts/test sets LIVELINE_TEST_AMQPS_URL")
            let tlsDirectory = try #require(environment["LIVELINE_TEST_TLS_DIR"])

            var trusted = try AMQPConfiguration(url: url)
            trusted.tls?.caFile = "\(tlsDirectory)/ca.pem"
            let connection = try await AMQPConnection.connect(trusted, logger: Broker.logger)
            let queue = Broker.unique("tls")
            try await connection.declare(AMQPTopology(queues: [.init(queue, arguments: quorum)]))
            try await connection.publish(message("over tls", to: queue))
            let consumer = try await connection.consume(queue: queue)
            let delivery = try await receive(1, from: consumer)[0]
            #expect(String(decoding: delivery.body, as: UTF8.self) == "over tls")
            delivery.ack()
            await consumer.close()
            try await connection.delete(queue: queue)
            await connection.close()

            var untrusted = trusted
            untrusted.tls?.caFile = "\(tlsDirectory)/other-ca.pem"
            await #expect {
                _ = try await AMQPConnection.connect(untrusted, logger: Broker.logger)
            } throws: { error in
                let error = try #require(error as? AMQPError)
                return error.code == .tlsFailed && error.isFatal
            }
        }
    }

    @Test func publishesWaitWhileTheBrokerBlocksAndCompleteAfterwards() async throws {
        try await withBroker(exclusive: true) {
            let connection = try await Broker.connect()
            let queue = Broker.unique("blocked")
            try await connection.declare(AMQPTopology(queues: [.init(queue, arguments: quorum)]))
            try await connection.publish(message("before", to: queue))

            try await Broker.control("alarm", "on")
            do {
                // RabbitMQ blocks a connection on its next publish once the alarm is on; under a
                // loaded full suite on two cores the alarm took over 15 s to reach the connection.
                let probe = Task { try await connection.publish(message("probe", to: queue)) }
                try await eventually(timeout: .seconds(40), "connection.blocked arrives") { connection.isBlocked }
                let waiting = Task { try await connection.publish(message("during", to: queue)) }
                try await Task.sleep(for: .seconds(1))
                #expect(connection.state == .connected, "a blocked connection is not a broken one")
                try await Broker.control("alarm", "off")
                try await probe.value
                try await waiting.value
            } catch {
                try? await Broker.control("alarm", "off")
                throw error
            }
            try await eventually("connection.unblocked arrives") { !connection.isBlocked }
            #expect(try await connection.messageCount(queue: queue) == 3)
            try await connection.delete(queue: queue)
            await connection.close()
        }
    }
}
