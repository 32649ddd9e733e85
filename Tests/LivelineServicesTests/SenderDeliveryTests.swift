import APNsSimulator
import Foundation
import LivelineAMQP
import LivelineCore
import LivelineServices
import LivelineStore
import LivelineStoreTestSupport
import LivelineTestSupport
import Testing

/// Jobs that APNs takes: device pushes, broadcasts, several apps.
@Suite struct SenderDeliveryTests {
    @Test func deliversThePayloadBytesWithTheJobsHeaders() async throws {
        try await withSender { harness in
            let token = randomDeviceToken()
            let high = makeJob(target: .device(token: token, kind: .update), priority: .high)
            let lowToken = randomDeviceToken()
            let low = makeJob(target: .device(token: lowToken, kind: .update), priority: .low)
            try await harness.publish([high, low])

            try await eventually("both delivered") {
                harness.simulator.deliveries(toDevice: token).count == 1
                    && harness.simulator.deliveries(toDevice: lowToken).count == 1
            }
            let delivery = try #require(harness.simulator.deliveries(toDevice: token).first)
            #expect(delivery.payload == Array(high.payload))
            #expect(delivery.priority == 10)
            #expect(delivery.topic == "com.example.rides.push-type.liveactivity")
            #expect(delivery.pushType == "liveactivity")
            #expect(delivery.apnsID.lowercased() == high.apnsId.uuidString.lowercased())
            #expect(delivery.headers["apns-expiration"] == high.expiration.map(String.init))
            #expect(harness.simulator.deliveries(toDevice: lowToken).first?.priority == 5)

            try await eventually("acked and traced") {
                let trace = try await harness.store.trace(activityID: high.activityId, limit: 10)
                return try await harness.messageCount(harness.topology.sendQueues[0]) == 0
                    && trace.contains { $0.kind == .apnsOutcome && $0.detail.contains("delivered") }
            }
            let trace = try await harness.store.trace(activityID: high.activityId, limit: 10)
            #expect(!trace.contains { $0.detail.contains(token) }, "traces hold a token prefix only")
            // Nothing is resent later.
            try await Task.sleep(for: .milliseconds(300))
            #expect(harness.simulator.deliveries(toDevice: token).count == 1)
        }
    }

    @Test func oneSenderServesSeveralAppsAndDeadLettersUnknownOnes() async throws {
        try await withSender(bundleIDs: ["com.example.rides", "com.example.scores"]) { harness in
            let rideToken = randomDeviceToken()
            let scoreToken = randomDeviceToken()
            let strayToken = randomDeviceToken()
            let stray = makeJob(target: .device(token: strayToken, kind: .update), bundleID: "com.example.unknown")
            try await harness.publish([
                makeJob(target: .device(token: rideToken, kind: .update), bundleID: "com.example.rides"),
                makeJob(target: .device(token: scoreToken, kind: .update), bundleID: "com.example.scores"),
                stray,
            ])
            try await eventually("both apps delivered") {
                harness.simulator.deliveries(toDevice: rideToken).count == 1
                    && harness.simulator.deliveries(toDevice: scoreToken).count == 1
            }
            #expect(harness.simulator.deliveries(toDevice: rideToken).first?.topic == "com.example.rides.push-type.liveactivity")
            #expect(harness.simulator.deliveries(toDevice: scoreToken).first?.topic == "com.example.scores.push-type.liveactivity")

            let (letter, headers) = try #require(try await harness.deadLetters(1).first)
            #expect(letter.reason.rawValue == "unknown-app")
            #expect(letter.jobId == stray.jobId)
            #expect(headers["x-liveline-reason"]?.stringValue == "unknown-app")
            #expect(harness.simulator.deliveries(toDevice: strayToken).isEmpty)
        }
    }

    @Test func undecodableJobsAreDeadLetteredWithTheirBytes() async throws {
        try await withSender { harness in
            let body = Data(#"{"jobId":"x","not":"a push job"}"#.utf8)
            try await harness.publish(raw: body)
            let (letter, headers) = try #require(try await harness.deadLetters(1).first)
            #expect(letter.reason == .invalidJob)
            #expect(letter.originalBody == body)
            #expect(headers["x-liveline-reason"]?.stringValue == "invalid-job")
        }
    }

    /// A bundle's jobs are each taken to their own end: sent, retried through a tier as a
    /// job of its own, or dead-lettered with their own bytes; the message is acked once.
    @Test func eachJobOfABundleIsSentRetriedOrDeadLetteredAsItself() async throws {
        try await withSender { harness in
            let activity = "g-\(UUID().uuidString.prefix(6))"
            let tokens = (0..<4).map { _ in randomDeviceToken() }
            harness.simulator.injectFault(.internalServerError, forDevice: tokens[3], times: 1)
            let jobs = tokens.map { makeJob(target: .device(token: $0, kind: .pushToStart), activityID: activity, event: .start) }
            var body = PushJobBundle.encode(jobs)
            let junk = Data(#"{"jobId":"x","not":"a push job"}"#.utf8)
            body.append(junk + Data("\n".utf8))
            try await harness.connection.publish(AMQPMessage(
                exchange: harness.topology.pushExchange, routingKey: harness.topology.sendRoutingKey(shard: 0), body: body,
                properties: AMQPProperties(contentType: PushJobBundle.contentType, messageID: "bundle-1")))

            try await eventually("every job delivered, the failed one after its tier") {
                tokens.allSatisfy { harness.simulator.deliveries(toDevice: $0).count == 1 }
            }
            for (token, job) in zip(tokens, jobs) {
                #expect(harness.simulator.deliveries(toDevice: token).first?.apnsID.lowercased() == job.apnsId.uuidString.lowercased())
            }
            #expect(harness.metrics.total("liveline_sender_retries_total", [("tier", "1s")]) == 1)
            let (letter, _) = try #require(try await harness.deadLetters(1).first)
            #expect(letter.reason == .invalidJob)
            #expect(letter.originalBody == junk, "the bad line alone, not the bundle")
            try await eventually("the bundle acked, nothing left") {
                let retrying = try await harness.messageCount(harness.topology.retryQueue(harness.topology.retryTiers[0]))
                return try await harness.messageCount(harness.topology.sendQueues[0]) == 0 && retrying == 0
            }
            try await Task.sleep(for: .milliseconds(300))
            #expect(tokens.allSatisfy { harness.simulator.deliveries(toDevice: $0).count == 1 }, "nothing sent twice")
        }
    }

    /// A bundle is acked once every job in it has its outcome, not when its first is sent:
    /// with a prefetch of one, the broker holds the next bundle back until that ack, so the
    /// next bundle's job reaches APNs only after the first bundle's slow job. Each job is an
    /// activity of its own, so no lane orders them.
    @Test func aBundleIsAckedOnlyOnceEveryJobInItHasItsOutcome() async throws {
        try await withSender(settings: { $0.prefetch = 1 }) { harness in
            let tokens = (0..<3).map { _ in randomDeviceToken() }
            harness.simulator.injectFault(.latency(milliseconds: 1_500), forDevice: tokens[1], times: 1)
            let jobs = tokens.map { makeJob(target: .device(token: $0, kind: .update)) }
            for (index, bundle) in [Array(jobs[0...1]), [jobs[2]]].enumerated() {
                try await harness.connection.publish(AMQPMessage(
                    exchange: harness.topology.pushExchange, routingKey: harness.topology.sendRoutingKey(shard: 0),
                    body: PushJobBundle.encode(bundle),
                    properties: AMQPProperties(contentType: PushJobBundle.contentType, messageID: "bundle-\(index)")))
            }
            try await eventually("every job delivered") {
                tokens.allSatisfy { harness.simulator.deliveries(toDevice: $0).count == 1 }
            }
            let fast = try #require(harness.simulator.deliveries(toDevice: tokens[0]).first?.receivedAt)
            let next = try #require(harness.simulator.deliveries(toDevice: tokens[2]).first?.receivedAt)
            #expect(next.timeIntervalSince(fast) >= 1.4, "the second bundle came before the first's slow job was answered")
        }
    }

    @Test(arguments: StoreKind.underTest)
    func opensTheActivitysChannelOnFirstUseBroadcastsAndDeletesItAfterTheEnd(store: StoreKind) async throws {
        try await withSender(store: store) { harness in
            let gameID = "game-\(UUID().uuidString.prefix(6))"
            // apns-expiration 0, as the translator sets it for a channel that stores nothing.
            let first = makeJob(target: .channel(key: gameID), activityID: gameID, expiration: 0)
            try await harness.publish([first])
            try await eventually("channel opened and broadcast delivered") {
                guard let channel = try await harness.store.channel(domain: "ride", key: gameID) else { return false }
                return harness.simulator.deliveries(toChannel: channel.channelID).count == 1
            }
            let channel = try #require(try await harness.store.channel(domain: "ride", key: gameID))
            #expect(channel.deletedAt == nil)
            #expect(harness.simulator.channelIDs(bundleID: "com.example.rides").contains(channel.channelID))
            #expect(harness.simulator.deliveries(toChannel: channel.channelID).first?.payload == Array(first.payload))

            // Later pushes reuse the live channel.
            try await harness.publish([makeJob(target: .channel(key: gameID), activityID: gameID, expiration: 0)])
            try await eventually("second broadcast delivered") {
                harness.simulator.deliveries(toChannel: channel.channelID).count == 2
            }
            #expect(try await harness.store.channel(domain: "ride", key: gameID)?.channelID == channel.channelID)

            let end = makeJob(target: .channel(key: gameID), activityID: gameID, event: .end, expiration: 0, isTerminal: true)
            try await harness.publish([end])
            try await eventually("channel deleted after the end") {
                try await harness.store.channel(domain: "ride", key: gameID)?.deletedAt != nil
            }
            #expect(harness.simulator.deliveries(toChannel: channel.channelID).count == 3)
            #expect(!harness.simulator.channelIDs(bundleID: "com.example.rides").contains(channel.channelID))
        }
    }

    /// The sweeper deletes the channels nobody will hear again (ended past the grace, started
    /// past 8 h + 4 h, never started and idle a week, or never stored and old) and this
    /// deployment's orphans at APNs, and never a live game's, a game scheduled a day ahead,
    /// or a channel another deployment created.
    @Test(arguments: StoreKind.underTest)
    func theSweeperRemovesDeadAndOrphanChannelsButNeverALiveGames(store: StoreKind) async throws {
        try await withSender(store: store) { harness in
            let client = harness.client()
            let keeper = ChannelKeeper(store: harness.store, logger: SenderBroker.logger)
            let now = Date()
            let run = UUID().uuidString.prefix(6)
            let hour: TimeInterval = 3_600
            // (key, first event this long ago, started this long ago, ended this long ago)
            let games: [(String, TimeInterval?, TimeInterval?, TimeInterval?)] = [
                ("live", hour, hour, nil), ("just-ended", hour, hour, 600), ("ended", 4 * hour, 4 * hour, 2 * hour),
                ("forgotten", 13 * hour, 13 * hour, nil), ("never-stored", nil, nil, nil),
                ("scheduled", 24 * hour, nil, nil), ("abandoned", 8 * 24 * hour, nil, nil),
            ]
            var channels: [String: String] = [:]
            for (name, firstAgo, startedAgo, endedAgo) in games {
                let key = "\(name)-\(run)"
                let created = now.addingTimeInterval(-(firstAgo ?? 13 * hour))
                channels[name] = try await keeper.openChannel(domain: "score", key: key, client: client, now: created).channelID
                guard let firstAgo else { continue }
                _ = try await harness.store.applyChanges([ActivityChange(
                    activityID: key, domain: "score", attributesType: "ScoreAttributes", userID: "", contentState: "{}",
                    eventTime: now.addingTimeInterval(-firstAgo), startedAt: startedAgo.map { now.addingTimeInterval(-$0) })])
                if let endedAgo {
                    _ = try await harness.store.applyChanges([ActivityChange(
                        activityID: key, domain: "score", attributesType: "ScoreAttributes", userID: "", contentState: "{}",
                        eventTime: now.addingTimeInterval(-endedAgo), end: .init(at: now.addingTimeInterval(-endedAgo), reason: "final"))])
                }
            }
            // Created by a worker of this deployment that stopped before storing it, and by
            // another deployment on the same app and environment.
            let orphan = try await client.createChannel()
            try await harness.store.recordCreatedChannel(orphan, at: now)
            let foreign = try await client.createChannel()
            let sweeper = ChannelSweeper(
                store: harness.store, clients: APNsClientDirectory([client]), apps: [client.bundleID],
                keys: AppKeys(defaultApp: client.bundleID), settings: .init(orphanGrace: .milliseconds(10)), logger: SenderBroker.logger)

            #expect(try await sweeper.sweep(now: now) == 4)
            let atAPNs = Set(harness.simulator.channelIDs(bundleID: client.bundleID))
            let kept = ["live": true, "just-ended": true, "ended": false, "forgotten": false, "never-stored": false,
                        "scheduled": true, "abandoned": false]
            for (name, expected) in kept {
                let id = try #require(channels[name])
                #expect(atAPNs.contains(id) == expected, "\(name) at APNs")
                #expect((try await harness.store.channel(domain: "score", key: "\(name)-\(run)")?.deletedAt == nil) == expected, "\(name) in the store")
            }
            #expect(try await sweeper.sweep(now: now) == 0, "a second sweep finds nothing")

            #expect(await sweeper.deleteOrphans() == 1)
            let left = Set(harness.simulator.channelIDs(bundleID: client.bundleID))
            #expect(!left.contains(orphan))
            #expect(left.contains(foreign), "another deployment's channel stays")
            #expect(left.contains(try #require(channels["live"])), "a live game's channel stays")
            #expect(try await harness.store.createdChannelIDs() == [channels["live"]!, channels["just-ended"]!, channels["scheduled"]!])
        }
    }

    /// Two deployments (two stores) on one app and APNs environment, such as staging and
    /// development: each sweeps at start and on its schedule, and neither loses a live
    /// channel; each deletes only its own orphan.
    @Test(arguments: StoreKind.underTest)
    func twoDeploymentsOnOneAppNeverSweepEachOthersChannels(store: StoreKind) async throws {
        try await withSender(store: store) { harness in
            try await StoreKind.sqlite.withStore { other in
                let client = harness.client()
                let now = Date()
                var live: [String] = [], orphans: [String] = []
                for (name, deployment) in [("staging", harness.store), ("development", other)] {
                    let keeper = ChannelKeeper(store: deployment, logger: SenderBroker.logger)
                    let key = "\(name)-\(UUID().uuidString.prefix(6))"
                    live.append(try await keeper.openChannel(domain: "score", key: key, client: client, now: now).channelID)
                    _ = try await deployment.applyChanges([ActivityChange(
                        activityID: key, domain: "score", attributesType: "ScoreAttributes", userID: "", contentState: "{}",
                        eventTime: now.addingTimeInterval(-600), startedAt: now.addingTimeInterval(-600))])
                    let orphan = try await client.createChannel()
                    try await deployment.recordCreatedChannel(orphan, at: now)
                    orphans.append(orphan)
                }
                var deleted = 0
                for deployment in [harness.store, other] {
                    let sweeper = ChannelSweeper(
                        store: deployment, clients: APNsClientDirectory([client]), apps: [client.bundleID],
                        keys: AppKeys(defaultApp: client.bundleID), settings: .init(orphanGrace: .milliseconds(10)), logger: SenderBroker.logger)
                    deleted += await sweeper.deleteOrphans()
                    deleted += try await sweeper.sweep(now: now)
                }
                #expect(deleted == 2, "each deployment's own orphan, nothing else")
                let atAPNs = Set(harness.simulator.channelIDs(bundleID: client.bundleID))
                #expect(atAPNs.isSuperset(of: live), "both deployments' live games keep their channels")
                #expect(atAPNs.isDisjoint(with: orphans))
            }
        }
    }

    @Test(arguments: StoreKind.underTest)
    func keeperReusesALiveChannel(store: StoreKind) async throws {
        try await withSender(store: store) { harness in
            let client = harness.client()
            let keeper = ChannelKeeper(store: harness.store, logger: SenderBroker.logger)
            let channel = try await keeper.openChannel(domain: "score", key: "g-1", client: client)
            #expect(try await keeper.openChannel(domain: "score", key: "g-1", client: client).channelID == channel.channelID)
            #expect(try await keeper.closeChannel(domain: "score", key: "g-1", channelID: channel.channelID, client: client))
            let reopened = try await keeper.openChannel(domain: "score", key: "g-1", client: client)
            #expect(reopened.channelID != channel.channelID, "a deleted channel is never served again")
        }
    }
}
