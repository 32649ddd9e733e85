import APNsSimulator
import Foundation
import LivelineAMQP
import LivelineAPNs
import LivelineCore
import LivelineServices
import LivelineStore
import LivelineStoreTestSupport
import LivelineTestSupport
import Testing

/// Transient failures go through the TTL tiers; permanent ones and stale jobs never loop.
@Suite struct SenderRetryTests {
    @Test(arguments: [APNsSimulatorFault.internalServerError, .serviceUnavailable])
    func transientFailureRetriesThroughATierThenSucceeds(fault: APNsSimulatorFault) async throws {
        try await withSender { harness in
            let token = randomDeviceToken()
            harness.simulator.injectFault(fault, forDevice: token, times: 1)
            let job = makeJob(target: .device(token: token, kind: .update))
            let published = ContinuousClock.now
            try await harness.publish([job])
            try await eventually("delivered on the retry") {
                harness.simulator.deliveries(toDevice: token).count == 1
            }
            #expect(ContinuousClock.now - published >= .milliseconds(900), "waited in the 1 s tier")
            #expect(harness.simulator.deliveries(toDevice: token).first?.payload == Array(job.payload))
            // Operators see APNs' reason for the retry, and the tier it waited in.
            let reason = fault == .internalServerError ? "InternalServerError" : "ServiceUnavailable"
            #expect(harness.metrics.total("liveline_sender_pushes_total", [("outcome", "retried"), ("reason", reason)]) == 1)
            #expect(harness.metrics.total("liveline_sender_retries_total", [("tier", "1s")]) == 1)
            try await eventually("the retry and the delivery traced") {
                let trace = try await harness.store.trace(activityID: job.activityId, limit: 10)
                return trace.contains { $0.detail.contains("attempt 2 after tier") }
                    && trace.contains { $0.detail.contains("delivered (200), attempt 2") }
            }
            #expect(try await harness.messageCount(harness.topology.deadQueue) == 0)
        }
    }

    @Test func persistentFailureIsDeadLetteredAfterTheLastTier() async throws {
        try await withSender { harness in
            let token = randomDeviceToken()
            harness.simulator.injectFault(.internalServerError, forDevice: token)
            let job = makeJob(target: .device(token: token, kind: .update))
            try await harness.publish([job])
            let (letter, headers) = try #require(try await harness.deadLetters(1).first)
            #expect(letter.reason == .retriesExhausted)
            #expect(letter.attempts == 3, "the first send and one per tier")
            #expect(letter.lastAttemptAt.millisecondsSince1970 - letter.firstAttemptAt.millisecondsSince1970 >= 1_900)
            #expect(letter.message.contains("InternalServerError"))
            #expect(headers["x-liveline-reason"]?.stringValue == "retries-exhausted")
            #expect(harness.simulator.statistics.responsesByStatus[500] == 3)
        }
    }

    /// APNs answers 403 ExpiredProviderToken when it thinks the token is over an hour old:
    /// the client mints a new one once and resends; the job is delivered and acked.
    @Test func expiredProviderTokenIsRefreshedOnceAndThePushDelivered() async throws {
        // The simulator checks iat against real time. The client's clock starts 61 minutes
        // back, so its first token is expired for the simulator; 21 minutes later (for the
        // client) a refresh is allowed.
        let clock = ManualWallClock(now: Date().addingTimeInterval(-61 * 60))
        try await withSender(clock: clock) { harness in
            let signer = harness.client().tokenSigner
            _ = signer.currentToken()
            clock.advance(by: 21 * 60)
            let token = randomDeviceToken()
            try await harness.publish([makeJob(target: .device(token: token, kind: .update))])
            try await eventually("delivered with a fresh token") {
                harness.simulator.deliveries(toDevice: token).count == 1
            }
            #expect(harness.simulator.statistics.responsesByStatus[403] == 1)
            #expect(signer.mintCount == 2, "one refresh")
            #expect(try await harness.messageCount(harness.topology.deadQueue) == 0)
        }
    }

    /// A token APNs keeps refusing (here: refused again inside the 20-minute refresh floor)
    /// is an app-wide problem: the job waits through the tiers rather than being dropped.
    @Test func providerTokenStillRefusedGoesThroughTheTiers() async throws {
        let clock = ManualWallClock(now: Date().addingTimeInterval(-61 * 60))
        try await withSender(clock: clock) { harness in
            let token = randomDeviceToken()
            try await harness.publish([makeJob(target: .device(token: token, kind: .update))])
            let (letter, _) = try #require(try await harness.deadLetters(1).first)
            #expect(letter.reason == .retriesExhausted)
            #expect(letter.attempts == 3)
            #expect(letter.message.contains("ExpiredProviderToken"))
            #expect(harness.client().tokenSigner.mintCount == 1, "never refreshed twice within 20 minutes")
            #expect(harness.simulator.deliveries(toDevice: token).isEmpty)
        }
    }

    @Test func throttledTokenBacksOffThenSucceeds() async throws {
        // A back-off longer than the tiers: held-back jobs cycle through a tier unsent,
        // without using up their attempts.
        // 10 s leaves room for a loaded machine between the 429 and the second job.
        try await withSender(settings: { $0.throttleBackoff = .seconds(10); $0.maximumThrottleBackoff = .seconds(10) }) { harness in
            let token = randomDeviceToken()
            let other = randomDeviceToken()
            harness.simulator.injectFault(.tooManyRequests, forDevice: token, times: 1)
            let first = makeJob(target: .device(token: token, kind: .update))
            try await harness.publish([first])
            // The trace line is written after the back-off is set: a safe point to go on from.
            try await eventually("the sender handled the 429") {
                try await harness.store.trace(activityID: first.activityId, limit: 10).contains {
                    $0.detail.contains("TooManyRequests")
                }
            }
            // While the token backs off, its next job waits in a tier without being sent;
            // other tokens are not held back.
            let second = makeJob(target: .device(token: token, kind: .update))
            try await harness.publish([second, makeJob(target: .device(token: other, kind: .update))])
            try await eventually(timeout: .seconds(5), "other token delivered at once") {
                harness.simulator.deliveries(toDevice: other).count == 1
            }
            #expect(harness.simulator.deliveries(toDevice: token).isEmpty)
            try await eventually(timeout: .seconds(60), "both jobs of the throttled token delivered after the back-off") {
                harness.simulator.deliveries(toDevice: token).count == 2
            }
            #expect(harness.simulator.statistics.responsesByStatus[429] == 1, "never sent during the back-off")
            #expect(try await harness.messageCount(harness.topology.deadQueue) == 0)
            let trace = try await harness.store.trace(activityID: second.activityId, limit: 10)
            #expect(trace.contains { $0.detail.contains("backing off") })
        }
    }

    @Test func payloadTooLargeIsDeadLettered() async throws {
        try await withSender { harness in
            let token = randomDeviceToken()
            let big = Data(#"{"aps":{"event":"update","content-state":{"blob":"\#(String(repeating: "x", count: 5_000))"}}}"#.utf8)
            try await harness.publish([makeJob(target: .device(token: token, kind: .update), payload: big)])
            let (letter, _) = try #require(try await harness.deadLetters(1).first)
            #expect(letter.reason == .payloadTooLarge)
            #expect(harness.simulator.statistics.responsesByStatus[413] == 1)
        }
    }

    @Test func expiredUpdatesAreDroppedButEndsAreSent() async throws {
        try await withSender { harness in
            let token = randomDeviceToken()
            let past = Int64(Date().timeIntervalSince1970) - 10
            let stale = makeJob(target: .device(token: token, kind: .update), expiration: past)
            let end = makeJob(target: .device(token: token, kind: .update), event: .end, expiration: past, isTerminal: true)
            try await harness.publish([stale, end])
            try await eventually("the end delivered") {
                harness.simulator.deliveries(toDevice: token).count == 1
            }
            try await eventually("the stale update traced as dropped") {
                try await harness.store.trace(activityID: stale.activityId, limit: 10).contains { $0.kind == .dropped }
            }
            #expect(harness.simulator.deliveries(toDevice: token).first?.payload == Array(end.payload))
            #expect(try await harness.messageCount(harness.topology.deadQueue) == 0)
            #expect(try await harness.messageCount(harness.topology.sendQueues[0]) == 0)
        }
    }

    /// A backlog of 50 updates for one ride reaches the device as a handful of pushes, the
    /// newest last: one when all 50 were in the sender before the first's turn, two when the
    /// first was already in flight. The rest are dropped as superseded, counted and traced,
    /// and every job is acked.
    @Test func aBacklogOfUpdatesForOneRideIsCoalesced() async throws {
        try await withSender { harness in
            let token = randomDeviceToken()
            // The first push takes two seconds at APNs, so the rest queue behind it.
            harness.simulator.injectFault(.latency(milliseconds: 2_000), forDevice: token, times: 1)
            let start = EventTime(Date()).millisecondsSince1970
            let activity = "r-backlog-\(UUID().uuidString.prefix(6))"
            let jobs = (0..<50).map { index in
                makeJob(target: .device(token: token, kind: .update), activityID: activity, priority: .low, sequence: start + Int64(index))
            }
            try await harness.publish(jobs)
            let newest = jobs[49].apnsId.uuidString.lowercased()
            func dropped() -> Int64 { harness.metrics.total("liveline_sender_dropped_total", [("reason", "superseded")]) }
            try await eventually("every job sent or dropped, the newest delivered") {
                let delivered = harness.simulator.deliveries(toDevice: token)
                return delivered.last?.apnsID.lowercased() == newest && Int64(delivered.count) + dropped() == 50
            }
            try await eventually("every job acked") { try await harness.messageCount(harness.topology.sendQueues[0]) == 0 }
            let delivered = harness.simulator.deliveries(toDevice: token).map(\.apnsID).map { $0.lowercased() }
            #expect((1...5).contains(delivered.count), "a handful of pushes, not 50: \(delivered.count)")
            try await eventually("each drop traced") {
                let trace = try await harness.store.trace(activityID: activity, limit: 100)
                return trace.filter { $0.kind == .dropped && $0.detail.contains("a newer job for the same target is queued") }.count
                    == Int(dropped())
            }
            #expect(try await harness.messageCount(harness.topology.deadQueue) == 0)
        }
    }

    /// A goal queued behind clock ticks, with ticks behind it: the fan gets the goal once, at
    /// priority 10 with its alert, and ends on the newest tick; the ticks around it are
    /// coalesced.
    @Test func aGoalQueuedAmidTicksReachesTheFanOnceAtPriority10() async throws {
        try await withSender { harness in
            let token = randomDeviceToken()
            harness.simulator.injectFault(.latency(milliseconds: 2_000), forDevice: token, times: 1)
            let start = EventTime(Date()).millisecondsSince1970
            let activity = "g-goal-\(UUID().uuidString.prefix(6))"
            let jobs = (0..<30).map { index in
                let goal = index == 15
                return makeJob(
                    target: .device(token: token, kind: .update), activityID: activity, priority: goal ? .high : .low,
                    sequence: start + Int64(index), alerts: goal)
            }
            try await harness.publish(jobs)
            let goal = jobs[15].apnsId.uuidString.lowercased(), newest = jobs[29].apnsId.uuidString.lowercased()
            func dropped() -> Int64 { harness.metrics.total("liveline_sender_dropped_total", [("reason", "superseded")]) }
            try await eventually("every job sent or dropped, the newest delivered") {
                let delivered = harness.simulator.deliveries(toDevice: token)
                return delivered.last?.apnsID.lowercased() == newest && Int64(delivered.count) + dropped() == 30
            }
            let delivered = harness.simulator.deliveries(toDevice: token)
            let goals = delivered.filter { $0.apnsID.lowercased() == goal }
            #expect(goals.count == 1, "the goal once: \(delivered.count) pushes")
            #expect(goals.first?.priority == 10)
            #expect(delivered.count <= 6, "the ticks around it coalesced: \(delivered.count) pushes")
        }
    }

    /// One activity's pushes to different devices do not wait for each other (a game's
    /// audience); one device's do.
    @Test func anActivitysDevicesAreSentToInParallel() async throws {
        try await withSender { harness in
            let slow = randomDeviceToken(), fast = randomDeviceToken()
            harness.simulator.injectFault(.latency(milliseconds: 10_000), forDevice: slow, times: 1)
            let activity = "g-lanes-\(UUID().uuidString.prefix(6))"
            let first = makeJob(target: .device(token: slow, kind: .update), activityID: activity)
            let behind = makeJob(target: .device(token: fast, kind: .update), activityID: activity)
            try await harness.publish([first, behind])
            try await eventually("the second device served while the first waits") {
                harness.simulator.deliveries(toDevice: fast).count == 1
            }
            // Timed by the simulator, which answers the slow device 10 s after its request came:
            // behind it, the second device's request would come after that answer. A bound from
            // the publish instead failed on a busy machine (8.2 s against 7.5).
            let fastAt = harness.simulator.deliveries(toDevice: fast)[0].receivedAt
            if let slowAt = harness.simulator.deliveries(toDevice: slow).first?.receivedAt {
                #expect(fastAt.timeIntervalSince(slowAt) < 10, "did not wait behind the slow device")
            }
            try await eventually("the slow device served too") { harness.simulator.deliveries(toDevice: slow).count == 1 }
        }
    }

    @Test(arguments: StoreKind.underTest)
    func retriedUpdateSupersededByANewerEventIsDropped(store: StoreKind) async throws {
        try await withSender(store: store) { harness in
            let token = randomDeviceToken()
            let activity = "r-sup-\(UUID().uuidString.prefix(6))"
            let older = makeJob(target: .device(token: token, kind: .update), activityID: activity)
            _ = try await harness.store.applyChanges([
                ActivityChange(
                    activityID: activity, domain: "ride", attributesType: "RideAttributes", userID: "u-1",
                    contentState: "{}", eventTime: older.eventTime.date.addingTimeInterval(5)
                )
            ])
            // As if it came back from a retry tier, and as if a translator whose connection was
            // lost unconfirmed published it again after another translator moved on.
            try await harness.publish([older], headers: [SenderHeaders.attempt: .int(1)])
            let resent = makeJob(target: .device(token: token, kind: .update), activityID: activity)
            try await harness.publish([resent], headers: [AMQPMessage.resentHeader: .bool(true)])
            try await eventually("both dropped as superseded") {
                try await harness.store.trace(activityID: activity, limit: 10).count { $0.detail.contains("superseded") } == 2
            }
            #expect(harness.simulator.deliveries(toDevice: token).isEmpty)
            // A first send is not checked: the translator made it as new as it gets.
            let fresh = makeJob(target: .device(token: token, kind: .update), activityID: activity)
            try await harness.publish([fresh])
            try await eventually("first send delivered") { harness.simulator.deliveries(toDevice: token).count == 1 }
        }
    }
}
