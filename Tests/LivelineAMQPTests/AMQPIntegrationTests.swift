import Foundation
import LivelineAMQP
import LivelineMessaging
import LivelineTestSupport
import Testing

/// The AMQP layer against a real RabbitMQ (no mocks).
@Suite(.timeLimit(.minutes(2)))
struct AMQPIntegrationTests {
    @Test func publishReturnsOnlyOnceTheBrokerConfirmed() async throws {
        try await withBroker {
            let connection = try await Broker.connect()
            let queue = Broker.unique("confirm")
            try await connection.declare(AMQPTopology(queues: [.init(queue, arguments: quorum)]))
            try await connection.publish(message("hello", to: queue))
            // Confirmed means the quorum queue holds it now, not eventually.
            #expect(try await connection.messageCount(queue: queue) == 1)

            let batch = (0..<500).map { message("m\($0)", to: queue) }
            try await connection.publish(contentsOf: batch)
            #expect(try await connection.messageCount(queue: queue) == 501)
            try await connection.delete(queue: queue)
            await connection.close()
        }
    }

    /// Of a cluster's brokers, one that cannot be reached costs one attempt: the connection
    /// goes on to the next.
    @Test func aBrokerThatCannotBeReachedIsPassedOverForTheNext() async throws {
        try await withBroker {
            var configuration = try Broker.configuration()
            // Port 1 on loopback refuses at once, as a node that is down would.
            configuration.brokers.insert(.init(host: "127.0.0.1", port: 1), at: 0)
            let connection = try await AMQPConnection.connect(configuration, logger: Broker.logger)
            let queue = Broker.unique("cluster")
            try await connection.declare(AMQPTopology(queues: [.init(queue, arguments: quorum)]))
            try await connection.publish(message("hello", to: queue))
            #expect(try await connection.messageCount(queue: queue) == 1)
            try await connection.delete(queue: queue)
            await connection.close()
        }
    }

    /// A connection made before it is opened takes work at once: the declare, the publish and
    /// the count wait in its mailbox and go out, in order, once `open()` connects.
    @Test func workGivenBeforeOpenGoesOutOnceItIsOpen() async throws {
        try await withBroker {
            let connection = try AMQPConnection(try Broker.configuration(), logger: Broker.logger)
            #expect(connection.state == .connecting)
            let queue = Broker.unique("before-open")
            let work = Task {
                try await connection.declare(AMQPTopology(queues: [.init(queue, arguments: quorum)]))
                try await connection.publish(message("early", to: queue))
                return try await connection.messageCount(queue: queue)
            }
            try await connection.open()
            #expect(try await work.value == 1)
            await #expect(throws: AMQPError.self) { try await connection.open() }
            try await connection.delete(queue: queue)
            await connection.close()
        }
    }

    /// A worker's first connection waits for a broker that is not up, within its patience,
    /// then fails with the last error; what was given to it meanwhile fails with that error.
    @Test func theFirstConnectionWaitsWithinItsPatienceThenFailsWhatWaited() async throws {
        var configuration = try AMQPConfiguration(url: "amqp://guest:guest@127.0.0.1:1/%2f")
        configuration.reconnect = .init(initial: .milliseconds(50), maximum: .milliseconds(100))
        configuration.firstConnectionPatience = .milliseconds(600)
        let connection = try AMQPConnection(configuration, logger: Broker.logger)
        // `submit` is in the mailbox when it returns.
        let receipt = connection.submit(contentsOf: [message("early", to: "never")])
        let started = ContinuousClock.now
        await #expect(throws: AMQPError.self) { try await connection.open() }
        // Several rounds, not one: each refusal on port 1 is at once, so the waits are the time.
        #expect(ContinuousClock.now - started >= .milliseconds(400))
        let failure = await #expect(throws: AMQPPublishError.self) { try await receipt.confirmed() }
        #expect(failure?.failures.first?.error.code == .connectionFailed, "\(String(describing: failure))")
        #expect(connection.state == .closed)
    }

    /// A service that stops while its broker is still not up stops waiting (cancellation ends
    /// `opened()`), and closing then ends the connection's own wait.
    @Test func aWaitForTheFirstConnectionEndsWhenCancelledAndTheConnectionWhenClosed() async throws {
        var configuration = try AMQPConfiguration(url: "amqp://guest:guest@127.0.0.1:1/%2f")
        configuration.firstConnectionPatience = .seconds(60)
        let connection = try AMQPConnection(configuration, logger: Broker.logger)
        let opening = Task { try await connection.open() }
        let waiting = Task { try await connection.opened() }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(connection.state == .connecting, "still trying")
        await connection.close()
        await #expect(throws: AMQPError.self) { try await opening.value }
        await #expect(throws: AMQPError.self) { try await connection.opened() }
    }

    /// Closing a connection never opened answers what waited for it, and it cannot open after.
    @Test func closingBeforeOpenFailsWhatWaitedAndReturns() async throws {
        let connection = try AMQPConnection(try AMQPConfiguration(url: "amqp://guest:guest@127.0.0.1:1/%2f"), logger: Broker.logger)
        let receipt = connection.submit(contentsOf: [message("early", to: "never")])
        await connection.close()
        let failure = await #expect(throws: AMQPPublishError.self) { try await receipt.confirmed() }
        #expect(failure?.failures.first?.error.code == .connectionClosed)
        #expect(connection.state == .closed)
        await #expect(throws: AMQPError.self) { try await connection.open() }
    }

    /// Publishes are framed by Liveline itself on plain TCP and by rabbitmq-c on TLS; both
    /// must carry every property and split bodies across frames exactly.
    @Test(arguments: ["LIVELINE_TEST_AMQP_URL", "LIVELINE_TEST_AMQPS_URL"])
    func propertiesAndBodiesOfEverySizeArriveIntact(urlVariable: String) async throws {
        try await withBroker {
            let environment = ProcessInfo.processInfo.environment
            let url = try #require(environment[urlVariable], "scripts/test sets \(urlVariable)")
            var configuration = try AMQPConfiguration(url: url)
            if configuration.tls != nil {
                configuration.tls?.caFile = try #require(environment["LIVELINE_TEST_TLS_DIR"]) + "/ca.pem"
            }
            let connection = try await AMQPConnection.connect(configuration, logger: Broker.logger)
            let queue = Broker.unique("frames")
            try await connection.declare(AMQPTopology(queues: [.init(queue, arguments: quorum)]))

            // The negotiated frame is 131,072 bytes, so 131,064 bytes of body fill one exactly.
            let sizes = [0, 1, 131_063, 131_064, 131_065, 400_000]
            let properties = AMQPProperties(
                contentType: "application/json", contentEncoding: "identity",
                headers: [
                    "x-text": "ünï ✓", "x-int": .int(-42), "x-flag": .bool(true),
                    "x-list": .array([.int(1), .string("two")]), "x-nested": .table(["k": .string("v")]),
                ],
                priority: 3, correlationID: "corr", replyTo: "reply", expiration: "60000", messageID: "m-1",
                timestamp: Date(timeIntervalSince1970: 1_795_000_000), type: "job", appID: "liveline")
            let bodies = sizes.map { size in Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }) }
            try await connection.publish(contentsOf: bodies.map {
                AMQPMessage(exchange: "", routingKey: queue, body: $0, properties: properties)
            })

            let consumer = try await connection.consume(queue: queue, prefetch: 10)
            let deliveries = try await receive(sizes.count, from: consumer)
            #expect(deliveries.map(\.body) == bodies)
            for delivery in deliveries {
                #expect(delivery.properties == properties)
                delivery.ack()
            }
            await consumer.close()
            try await connection.delete(queue: queue)
            await connection.close()
        }
    }

    @Test func unroutableMandatoryPublishFailsAndOnlyThatOne() async throws {
        try await withBroker {
            let connection = try await Broker.connect()
            let queue = Broker.unique("routable")
            let exchange = Broker.unique("nowhere")
            try await connection.declare(
                AMQPTopology(exchanges: [.init(exchange, kind: .topic, durable: false)], queues: [.init(queue, arguments: quorum)]))

            await #expect {
                try await connection.publish(AMQPMessage(exchange: exchange, routingKey: "no.binding", body: Data("x".utf8)))
            } throws: { error in
                let error = try #require(error as? AMQPError)
                return error.code == .unroutable && error.replyCode == .noRoute && !error.isRetriable
            }

            // In a pipelined batch, the return is matched to the right message.
            let batch = [
                message("a", to: queue),
                AMQPMessage(exchange: exchange, routingKey: "no.binding", body: Data("b".utf8)),
                message("c", to: queue),
            ]
            await #expect {
                try await connection.publish(contentsOf: batch)
            } throws: { error in
                let failures = try #require(error as? AMQPPublishError).failures
                return failures.map(\.index) == [1] && failures[0].error.code == .unroutable
            }
            #expect(try await connection.messageCount(queue: queue) == 2)
            try await connection.delete(queue: queue)
            try await connection.delete(exchange: exchange)
            await connection.close()
        }
    }

    @Test func consumeDeliversInOrderAndAcksRemoveMessages() async throws {
        try await withBroker {
            let connection = try await Broker.connect()
            let queue = Broker.unique("consume")
            try await connection.declare(AMQPTopology(queues: [.init(queue, arguments: quorum)]))
            try await connection.publish(contentsOf: (0..<1000).map { message("m\($0)", to: queue, id: "id-\($0)") })

            // Prefetch 100 < 1000: the rest only arrives because acks free the window.
            let consumer = try await connection.consume(queue: queue, prefetch: 100)
            var deliveries: [AMQPDelivery] = []
            for try await delivery in consumer {
                deliveries.append(delivery)
                delivery.ack()
                if deliveries.count == 1000 { break }
            }
            #expect(deliveries.map { String(decoding: $0.body, as: UTF8.self) } == (0..<1000).map { "m\($0)" })
            #expect(deliveries.allSatisfy { !$0.redelivered && $0.properties.persistent })
            #expect(deliveries[7].properties.messageID == "id-7")
            #expect(deliveries[7].properties.contentType == "text/plain")
            #expect(try await connection.consumerCount(queue: queue) == 1)
            await consumer.close()
            #expect(try await connection.messageCount(queue: queue) == 0)
            // A quorum queue's leader learns of the cancel asynchronously, so its
            // consumer count may lag the close by a moment.
            try await eventually("the consumer count drops to 0") {
                try await connection.consumerCount(queue: queue) == 0
            }
            try await connection.delete(queue: queue)
            await connection.close()
        }
    }

    /// A connection that may hold 10,000 body bytes unsettled takes about ten 1,000-byte
    /// messages, though its prefetch allows 500, and the rest as it acks: nothing lost, in
    /// order, and its heartbeats not missed while it reads nothing.
    @Test func heldBytesBoundWhatAConsumerTakesBeyondThePrefetch() async throws {
        try await withBroker {
            var configuration = try Broker.configuration()
            configuration.maximumHeldBytes = 10_000
            configuration.heartbeat = .seconds(1)
            let connection = try await AMQPConnection.connect(configuration, logger: Broker.logger)
            let queue = Broker.unique("held")
            try await connection.declare(AMQPTopology(queues: [.init(queue, arguments: quorum)]))
            let body = String(repeating: "x", count: 990)
            try await connection.publish(contentsOf: (0..<60).map { message(String(format: "%09d ", $0) + body, to: queue) })

            let consumer = try await connection.consume(queue: queue, prefetch: 500)
            /// What arrives within `wait`, or nothing.
            func take(within wait: Duration) async throws -> [AMQPDelivery] {
                try await withThrowingTaskGroup(of: [AMQPDelivery].self) { group in
                    group.addTask { try await consumer.nextBatch(maxSize: 500, linger: .zero) ?? [] }
                    group.addTask {
                        try? await Task.sleep(for: wait)
                        return []
                    }
                    var taken: [AMQPDelivery] = []
                    for try await batch in group {
                        taken += batch
                        group.cancelAll()
                    }
                    return taken
                }
            }
            var held: [AMQPDelivery] = []
            // Until nothing more comes for longer than two heartbeats: a connection that reads
            // nothing must not take the broker's silence for a loss.
            while case let batch = try await take(within: .seconds(3)), !batch.isEmpty { held += batch }
            #expect((10...11).contains(held.count), "took \(held.count) of 60 with 10,000 bytes allowed")
            var order = held.map { Int(String(decoding: $0.body.prefix(9), as: UTF8.self))! }
            for delivery in held { delivery.ack() }
            while order.count < 60 {
                for delivery in try await take(within: .seconds(10)) {
                    order.append(Int(String(decoding: delivery.body.prefix(9), as: UTF8.self))!)
                    delivery.ack()
                }
            }
            #expect(order == Array(0..<60))
            #expect(connection.state == .connected, "never reconnected")
            await consumer.close()
            try await connection.delete(queue: queue)
            await connection.close()
        }
    }

    /// A trickle taken in batches: once a linger ran its course, the owner thread leaves the
    /// socket unread through the next (DeliveryBuffer). Every message still arrives once and
    /// in order, the acks made meanwhile reach the broker, and a message after the trickle
    /// is not held back.
    @Test func aTrickleTakenInBatchesArrivesWholeAndItsAcksAreSent() async throws {
        try await withBroker {
            let publisher = try await Broker.connect()
            let queue = Broker.unique("trickle")
            try await publisher.declare(AMQPTopology(queues: [.init(queue, arguments: quorum)]))
            let connection = try await Broker.connect()
            let consumer = try await connection.consume(queue: queue, prefetch: 100)
            let count = 100
            let trickle = Task {
                for index in 0..<count {
                    try await publisher.publish(message("t\(index)", to: queue))
                    try await Task.sleep(for: .milliseconds(2))
                }
            }
            var bodies: [String] = []
            var batches = 0
            while bodies.count < count {
                // One step: each batch lingers its whole 300 ms, however slowly a loaded broker
                // confirms the publishes, so batches hold several.
                let batch = try #require(try await consumer.nextBatch(maxSize: 500, linger: .milliseconds(300)))
                bodies += batch.map { String(decoding: $0.body, as: UTF8.self) }
                batches += 1
                for delivery in batch { delivery.ack() }
            }
            try await trickle.value
            #expect(bodies == (0..<count).map { "t\($0)" })
            #expect(batches < count, "the trickle was batched: \(batches) batches")
            try await eventually("the acks applied") { try await publisher.messageCount(queue: queue) == 0 }

            try await Task.sleep(for: .milliseconds(200))
            let sent = ContinuousClock.now
            try await publisher.publish(message("after", to: queue))
            let after = try #require(try await consumer.nextBatch(maxSize: 500, linger: .milliseconds(300)))
            #expect(after.map { String(decoding: $0.body, as: UTF8.self) } == ["after"])
            #expect(ContinuousClock.now - sent < .seconds(2))
            after.forEach { $0.ack() }
            await consumer.close()
            try await connection.delete(queue: queue)
            await connection.close()
            await publisher.close()
        }
    }

    @Test func unackedMessagesAreRedeliveredAfterTheChannelCloses() async throws {
        try await withBroker {
            let connection = try await Broker.connect()
            let queue = Broker.unique("redeliver")
            try await connection.declare(AMQPTopology(queues: [.init(queue, arguments: quorum)]))
            try await connection.publish(contentsOf: (0..<3).map { message("r\($0)", to: queue) })

            let first = try await connection.consume(queue: queue, prefetch: 10)
            let unacked = try await receive(3, from: first)
            #expect(unacked.allSatisfy { !$0.redelivered })
            await first.close()

            let second = try await connection.consume(queue: queue, prefetch: 10)
            let again = try await receive(3, from: second)
            #expect(again.allSatisfy { $0.redelivered })
            #expect(Set(again.map(\.body)) == Set(unacked.map(\.body)))
            // Acks of the closed channel's deliveries are ignored, not sent on the new one.
            unacked.forEach { $0.ack() }
            again.forEach { $0.ack() }
            await second.close()
            #expect(try await connection.messageCount(queue: queue) == 0)
            try await connection.delete(queue: queue)
            await connection.close()
        }
    }

    @Test func rejectedMessageLandsInTheDeadLetterQueueWithItsReason() async throws {
        try await withBroker {
            let connection = try await Broker.connect()
            let topology = testTopology()
            try await connection.declare(topology.amqp)
            try await connection.publish(
                AMQPMessage(exchange: topology.eventsExchange, routingKey: "ride.status", body: Data("bad".utf8)))

            let work = try await connection.consume(queue: topology.translateQueues[0], prefetch: 1)
            try await receive(1, from: work)[0].reject()

            let dead = try await connection.consume(queue: topology.deadQueue, prefetch: 1)
            let letter = try await receive(1, from: dead)[0]
            #expect(String(decoding: letter.body, as: UTF8.self) == "bad")
            let death = try #require(letter.deaths.first)
            #expect(death.reason == "rejected")
            #expect(death.queue == topology.translateQueues[0])
            #expect(death.routingKeys == ["ride.status"])
            letter.ack()
            await work.close()
            await dead.close()
            try await delete(topology, on: connection)
            await connection.close()
        }
    }

    @Test func messageRequeuedPastTheDeliveryLimitIsDeadLettered() async throws {
        try await withBroker {
            let connection = try await Broker.connect()
            var topology = testTopology()
            topology.deliveryLimit = 2
            try await connection.declare(topology.amqp)
            try await connection.publish(
                AMQPMessage(exchange: topology.pushExchange, routingKey: topology.sendRoutingKey(shard: 0), body: Data("poison".utf8)))

            let work = try await connection.consume(queue: topology.sendQueues[0], prefetch: 1)
            // Delivered once plus `deliveryLimit` redeliveries, each returned to the queue.
            for _ in 0...topology.deliveryLimit {
                try await receive(1, from: work)[0].nack(requeue: true)
            }
            let dead = try await connection.consume(queue: topology.deadQueue, prefetch: 1)
            let letter = try await receive(1, from: dead)[0]
            #expect(letter.deaths.first?.reason == "delivery_limit")
            #expect(letter.deaths.first?.queue == topology.sendQueues[0])
            #expect(try await connection.messageCount(queue: topology.sendQueues[0]) == 0)
            letter.ack()
            await work.close()
            await dead.close()
            try await delete(topology, on: connection)
            await connection.close()
        }
    }

    @Test func retryTierReturnsTheJobToItsOwnSendShardAfterItsDelay() async throws {
        try await withBroker {
            let connection = try await Broker.connect()
            var topology = LivelineTopology(prefix: "test.\(UUID().uuidString.prefix(8).lowercased())", retryTiers: [], sendShards: 4)
            topology.retryTiers = [.init(name: "1s", delay: .seconds(1))]
            try await connection.declare(topology.amqp)
            let sent = ContinuousClock.now
            try await connection.publish(AMQPMessage(
                exchange: topology.retryExchange, routingKey: topology.retryRoutingKey(tier: topology.retryTiers[0], shard: 2),
                body: Data("again".utf8)))
            let work = try await connection.consume(queue: topology.sendQueues[2], prefetch: 1)
            let job = try await receive(1, from: work)[0]
            #expect(ContinuousClock.now - sent >= .milliseconds(900))
            #expect(String(decoding: job.body, as: UTF8.self) == "again")
            #expect(job.deaths.first?.reason == "expired")
            job.ack()
            for shard in [0, 1, 3] { #expect(try await connection.messageCount(queue: topology.sendQueues[shard]) == 0) }
            await work.close()
            try await delete(topology, on: connection)
            await connection.close()
        }
    }

    /// The translate stage's consistent-hash exchange keeps each activity's events in one
    /// shard, in order, and spreads activities over every shard.
    @Test func eventsOfOneActivityLandInOneTranslateShardInOrder() async throws {
        try await withBroker {
            let connection = try await Broker.connect()
            let topology = LivelineTopology(prefix: "test.\(UUID().uuidString.prefix(8).lowercased())", retryTiers: [], translateShards: 4)
            try await connection.declare(topology.amqp)
            let activities = (0..<40).map { "a-\($0)" }
            var messages: [AMQPMessage] = []
            for sequence in 0..<5 {
                for activity in activities {
                    messages.append(AMQPMessage(
                        exchange: topology.eventsExchange, routingKey: "ride.status", body: Data("\(activity) \(sequence)".utf8),
                        properties: AMQPProperties(headers: [LivelineTopology.activityHeader: .string(activity)]), mandatory: true))
                }
            }
            try await connection.publish(contentsOf: messages)
            var shardOf: [String: Int] = [:]
            var counts: [Int] = []
            for shard in 0..<4 {
                let count = try await connection.messageCount(queue: topology.translateQueues[shard])
                counts.append(count)
                guard count > 0 else { continue }
                let consumer = try await connection.consume(queue: topology.translateQueues[shard], prefetch: 500)
                var last: [String: Int] = [:]
                for delivery in try await receive(count, from: consumer) {
                    let fields = String(decoding: delivery.body, as: UTF8.self).split(separator: " ")
                    let (activity, sequence) = (String(fields[0]), Int(fields[1])!)
                    #expect(shardOf[activity, default: shard] == shard, "\(activity) in two shards")
                    #expect(sequence == last[activity, default: -1] + 1, "\(activity) out of order")
                    shardOf[activity] = shard
                    last[activity] = sequence
                    delivery.ack()
                }
                await consumer.close()
            }
            #expect(counts.reduce(0, +) == 200)
            #expect(shardOf.count == 40)
            #expect(counts.allSatisfy { $0 > 0 }, "every shard takes some activities: \(counts)")
            try await delete(topology, on: connection)
            await connection.close()
        }
    }

    /// A lease is an exclusive queue: one connection holds it, and it is free again the
    /// moment that connection closes.
    @Test func aShardLeaseIsHeldByOneConnectionUntilItCloses() async throws {
        try await withBroker {
            let first = try await Broker.connect()
            let second = try await Broker.connect()
            let lease = "test.lease.\(UUID().uuidString.prefix(8).lowercased())"
            #expect(try await first.claim(exclusiveQueue: lease))
            #expect(try await !second.claim(exclusiveQueue: lease))
            // The refusal closed only the control channel; the connection goes on.
            #expect(try await !second.claim(exclusiveQueue: lease))
            await first.close()
            #expect(try await second.claim(exclusiveQueue: lease))
            try await second.delete(queue: lease)
            await second.close()
        }
    }

    @Test func conflictingDeclarationIsFatalAndTheConnectionStaysUsable() async throws {
        try await withBroker {
            let connection = try await Broker.connect()
            let queue = Broker.unique("conflict")
            try await connection.declare(AMQPTopology(queues: [.init(queue, arguments: quorum)]))
            try await connection.declare(AMQPTopology(queues: [.init(queue, arguments: quorum)]))  // idempotent
            await #expect {
                try await connection.declare(AMQPTopology(queues: [.init(queue, arguments: ["x-queue-type": "classic"])]))
            } throws: { error in
                let error = try #require(error as? AMQPError)
                return error.code == .channelClosed && error.replyCode == .preconditionFailed && error.isFatal
            }
            try await connection.publish(message("still fine", to: queue))
            #expect(try await connection.messageCount(queue: queue) == 1)
            try await connection.delete(queue: queue)
            await connection.close()
        }
    }

    @Test func brokerCancellingTheConsumerEndsTheSequenceWithAnError() async throws {
        try await withBroker {
            let connection = try await Broker.connect()
            let queue = Broker.unique("cancelled")
            try await connection.declare(AMQPTopology(queues: [.init(queue, arguments: quorum)]))
            let consumer = try await connection.consume(queue: queue)
            let other = try await Broker.connect()
            try await other.delete(queue: queue)
            await #expect {
                for try await _ in consumer {}
            } throws: { error in
                (error as? AMQPError)?.code == .consumerCancelled
            }
            await other.close()
            await connection.close()
        }
    }

    @Test func wrongPasswordIsAFatalAuthenticationError() async throws {
        try await withBroker {
            var configuration = try Broker.configuration()
            configuration.password = "definitely-wrong"
            await #expect {
                _ = try await AMQPConnection.connect(configuration)
            } throws: { error in
                let error = try #require(error as? AMQPError)
                return error.code == .authenticationFailed && error.isFatal && !error.message.contains("definitely-wrong")
            }
        }
    }

    @Test func closeFailsNothingThatWasConfirmedAndRefusesNewWork() async throws {
        try await withBroker {
            let connection = try await Broker.connect()
            let queue = Broker.unique("close")
            try await connection.declare(AMQPTopology(queues: [.init(queue, arguments: quorum)]))
            try await connection.publish(contentsOf: (0..<200).map { message("c\($0)", to: queue) })
            await connection.close()
            #expect(connection.state == .closed)
            await #expect {
                try await connection.publish(message("late", to: queue))
            } throws: { error in
                (error as? AMQPError)?.code == .connectionClosed
            }
            let inspector = try await Broker.connect()
            #expect(try await inspector.messageCount(queue: queue) == 200)
            try await inspector.delete(queue: queue)
            await inspector.close()
        }
    }

    private func testTopology() -> LivelineTopology {
        LivelineTopology(prefix: "test.\(UUID().uuidString.prefix(8).lowercased())", retryTiers: [])
    }

    private func delete(_ topology: LivelineTopology, on connection: AMQPConnection) async throws {
        for queue in topology.amqp.queues { try await connection.delete(queue: queue.name) }
        for exchange in topology.amqp.exchanges { try await connection.delete(exchange: exchange.name) }
    }
}

// Two minutes: the time counts the wait for the broker gate, which a slow suite stretches.
@Suite(.timeLimit(.minutes(2)))
struct AMQPCloseTests {
    /// Acks made right before close() must reach the broker: the work they stand for is done.
    @Test func acksMadeJustBeforeCloseAreSent() async throws {
        try await withBroker {
            let publisher = try await Broker.connect()
            let queue = Broker.unique("close-acks")
            try await publisher.declare(AMQPTopology(queues: [.init(queue, arguments: quorum)]))
            try await publisher.publish(contentsOf: (0..<300).map { message("a\($0)", to: queue) })

            let connection = try await Broker.connect()
            let consumer = try await connection.consume(queue: queue, prefetch: 300)
            let deliveries = try await receive(300, from: consumer)
            for delivery in deliveries { delivery.ack() }
            await connection.close()

            // Unsent acks would put the 300 back on close; sent ones empty the queue, once the
            // quorum queue's leader applied them (through its log, a moment later).
            try await eventually("the acks applied") { try await publisher.messageCount(queue: queue) == 0 }
            try await publisher.delete(queue: queue)
            await publisher.close()
        }
    }
}
