import ArgumentParser
import Foundation
import LivelineBenchSupport
import LivelineAMQP

// Tests: scripts/bench

/// `liveline-bench amqp`: publish-with-confirms and consume-with-acks rates on a quorum queue.
struct AMQPBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "amqp",
        abstract: "Publish N persistent messages with confirms to a quorum queue, then consume them with acks."
    )

    @Option(help: "Broker URL.") var url = "amqp://guest:guest@127.0.0.1:5672/%2f"
    @Option(help: "Messages to publish and consume.") var messages = 100_000
    @Option(help: "Body size in bytes.") var size = 300
    @Option(help: "Messages per publish call.") var batch = 500
    @Option(help: "Publish calls in flight at once.") var concurrency = 4
    @Option(help: "Consumer prefetch.") var prefetch: UInt16 = 500

    func run() async throws {
        var configuration = try AMQPConfiguration(url: url)
        configuration.maxUnconfirmedPublishes = batch * concurrency
        configuration.connectionName = "bench-publisher"
        let publisher = try await AMQPConnection.connect(configuration)
        configuration.connectionName = "bench-consumer"
        let consumerConnection = try await AMQPConnection.connect(configuration)

        let queue = "bench.amqp.\(UUID().uuidString.prefix(8).lowercased())"
        try await publisher.declare(AMQPTopology(queues: [.init(queue, arguments: ["x-queue-type": "quorum"])]))
        let body = Data(repeating: UInt8(ascii: "x"), count: size)
        let message = AMQPMessage(
            exchange: "", routingKey: queue, body: body,
            properties: AMQPProperties(contentType: "application/octet-stream", messageID: "bench"))

        print("publishing \(messages) × \(size) B persistent, confirms, batches of \(batch), \(concurrency) in flight…")
        let clock = ContinuousClock()
        let publishStart = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            let calls = (messages + batch - 1) / batch
            var next = 0
            func submit() {
                let count = min(batch, messages - next * batch)
                next += 1
                group.addTask { try await publisher.publish(contentsOf: Array(repeating: message, count: count)) }
            }
            for _ in 0..<min(concurrency, calls) { submit() }
            while try await group.next() != nil {
                if next < calls { submit() }
            }
        }
        let publishElapsed = clock.now - publishStart
        print("  publish+confirm: \(rate(messages, publishElapsed)) (\(String(format: "%.2f", publishElapsed.seconds)) s)")

        let consumeStart = clock.now
        let consumer = try await consumerConnection.consume(queue: queue, prefetch: prefetch)
        var received = 0
        for try await delivery in consumer {
            delivery.ack()
            received += 1
            if received == messages { break }
        }
        await consumer.close()
        let consumeElapsed = clock.now - consumeStart
        print("  consume+ack:     \(rate(received, consumeElapsed)) (\(String(format: "%.2f", consumeElapsed.seconds)) s)")
        let left = try await publisher.messageCount(queue: queue)
        print("  left in queue:   \(left)")
        print(String(format: "  peak RSS:        %.1f MiB", ProcessUsage.peakRSSMebibytes()))
        try await publisher.delete(queue: queue)
        await consumerConnection.close()
        await publisher.close()
    }
}
