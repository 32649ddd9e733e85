import APNsSimulator
import Foundation
import LivelineAMQP
import LivelineCore
import LivelineServices
import ServiceLifecycle
import LivelineTestSupport
import Testing

/// Connection trouble and shutdown lose nothing: every job ends delivered, retried or
/// dead-lettered, and a drained sender leaves nothing unacked.
@Suite struct SenderResilienceTests {
    @Test func goAwayAndResetsMidFlightLoseNothing() async throws {
        let count = 400
        let resets = 5
        try await withSender(
            // Enough attempts that the faults below cannot use them up. Every reset takes all of its
            // connection's streams along, including the other reset tokens' requests when the
            // simulator had not read them yet, so those keep their fault for a later round: one job
            // can travel beside all five resets (and a connection closed after its GOAWAY grace).
            // The bound on attempts itself is tested in SenderRetryTests.
            tiers: (0...resets + 2).map { .init(name: "1s-\($0)", delay: .seconds(1)) },
            simulator: .init(goAwayAfterStreams: 60, goAwayConnectionLimit: nil)
        ) { harness in
            let tokens = (0..<count).map { _ in randomDeviceToken() }
            // Some requests kill their whole connection, taking the streams beside them along.
            for token in tokens.prefix(resets) {
                harness.simulator.injectFault(.resetConnection, forDevice: token, times: 1)
            }
            try await harness.publish(tokens.map { makeJob(target: .device(token: $0, kind: .update)) })

            do {
                try await eventually(timeout: .seconds(40), "every job delivered") {
                    tokens.allSatisfy { !harness.simulator.deliveries(toDevice: $0).isEmpty }
                }
            } catch {
                let missing = tokens.filter { harness.simulator.deliveries(toDevice: $0).isEmpty }
                let send = try await harness.messageCount(harness.topology.sendQueues[0])
                let dead = try await harness.messageCount(harness.topology.deadQueue)
                var retry = 0
                for tier in harness.topology.retryTiers { retry += try await harness.messageCount(harness.topology.retryQueue(tier)) }
                // Where the undelivered jobs are, so a failure says whether they were lost or late,
                // and why the dead-lettered ones gave up.
                let reasons = dead > 0 ? Dictionary(
                    (try await harness.deadLetters(dead)).map { ("\($0.0.reason.rawValue): \($0.0.message)", 1) }, uniquingKeysWith: +) : [:]
                Issue.record("\(missing.count) jobs undelivered; send queue \(send), retry queues \(retry), DLQ \(dead) \(reasons); simulator \(harness.simulator.statistics)")
                throw error
            }
            try await eventually("queues empty") {
                let send = try await harness.messageCount(harness.topology.sendQueues[0])
                var retry = 0
                for tier in harness.topology.retryTiers {
                    retry += try await harness.messageCount(harness.topology.retryQueue(tier))
                }
                return send == 0 && retry == 0
            }
            #expect(try await harness.messageCount(harness.topology.deadQueue) == 0)
            #expect(harness.simulator.statistics.goAwaysSent > 0)
            #expect(harness.simulator.statistics.connectionsReset > 0)
        }
    }

    @Test func gracefulShutdownFinishesInFlightSendsAndLeavesNothingUnacked() async throws {
        let count = 600
        let tokens = (0..<count).map { _ in randomDeviceToken() }
        try await withSender(
            // Long tiers, so nothing moves between queues while the counts are read.
            tiers: [.init(name: "30s", delay: .seconds(30))],
            settings: { $0.maximumSendsInFlight = 50; $0.prefetch = 200 },
            afterShutdown: { harness, report in
                #expect(report.unacked == 0, "the drained sender left nothing unacked")
                let delivered = tokens.filter { !harness.simulator.deliveries(toDevice: $0).isEmpty }.count
                var retrying = 0
                for tier in harness.topology.retryTiers {
                    retrying += try await harness.messageCount(harness.topology.retryQueue(tier))
                }
                #expect(delivered < count, "the shutdown came mid-stream")
                // A push APNs took but whose answer was lost (a stalled stream) is retried,
                // so it may be both delivered and queued: at least once, never lost.
                #expect(delivered + report.readyAfterClose + retrying >= count, "every job delivered or still queued")
                #expect(try await harness.messageCount(harness.topology.deadQueue) == 0)
            }
        ) { harness in
            // Slow answers keep sends in flight when the shutdown arrives.
            harness.simulator.injectRandomFaults([(fault: .latency(milliseconds: 100), probability: 1.0)])
            try await harness.publish(tokens.map { makeJob(target: .device(token: $0, kind: .update)) })
            try await eventually("some delivered") {
                harness.simulator.statistics.responsesByStatus[200, default: 0] >= 50
            }
        }
    }

    /// The same with bundles of ten jobs (a game's start): a shutdown mid-stream finishes every
    /// job of every bundle it took, acks those bundles whole, and leaves the rest queued
    /// whole. Every device's job is delivered, retrying, or still in a queued bundle.
    @Test func gracefulShutdownMidBundlesSettlesEachBundleWhole() async throws {
        let bundles = 60
        let tokens = (0..<bundles * 10).map { _ in randomDeviceToken() }
        try await withSender(
            tiers: [.init(name: "30s", delay: .seconds(30))],
            settings: { $0.maximumSendsInFlight = 50; $0.prefetch = 20 },
            afterShutdown: { harness, report in
                #expect(report.unacked == 0, "every bundle taken was settled and acked")
                let delivered = Set(tokens.filter { !harness.simulator.deliveries(toDevice: $0).isEmpty })
                #expect(delivered.count < tokens.count, "the shutdown came mid-stream")
                // What is still queued: whole bundles, none of them begun.
                let consumer = try await harness.connection.consume(queue: harness.topology.sendQueues[0], prefetch: 100)
                let left = report.readyAfterClose == 0 ? [] : try await receive(report.readyAfterClose, from: consumer)
                await consumer.close()
                let queued = try left.flatMap { delivery in
                    try PushJobBundle.lines(of: delivery.body).map { line -> String in
                        guard case .device(let token, _, _) = try PushJob(json: line).target else { return "" }
                        return token
                    }
                }
                #expect(left.allSatisfy { PushJobBundle.lines(of: $0.body).count == 10 })
                #expect(delivered.isDisjoint(with: queued), "a queued bundle holds no job that was sent")
                var retrying = 0
                for tier in harness.topology.retryTiers {
                    retrying += try await harness.messageCount(harness.topology.retryQueue(tier))
                }
                #expect(delivered.count + queued.count + retrying >= tokens.count, "every job delivered or still queued")
                #expect(try await harness.messageCount(harness.topology.deadQueue) == 0)
            }
        ) { harness in
            harness.simulator.injectRandomFaults([(fault: .latency(milliseconds: 100), probability: 1.0)])
            let activity = "g-\(UUID().uuidString.prefix(6))"
            try await harness.connection.publish(contentsOf: (0..<bundles).map { bundle in
                let jobs = tokens[(bundle * 10)..<(bundle * 10 + 10)].map {
                    makeJob(target: .device(token: $0, kind: .pushToStart), activityID: activity, event: .start)
                }
                return AMQPMessage(
                    exchange: harness.topology.pushExchange, routingKey: harness.topology.sendRoutingKey(shard: 0), body: PushJobBundle.encode(jobs),
                    properties: AMQPProperties(contentType: PushJobBundle.contentType, messageID: "bundle-\(bundle)"))
            })
            try await eventually("some delivered") {
                harness.simulator.statistics.responsesByStatus[200, default: 0] >= 50
            }
        }
    }
}
