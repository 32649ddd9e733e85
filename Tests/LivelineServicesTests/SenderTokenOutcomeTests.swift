import APNsSimulator
import Foundation
import LivelineCore
import LivelineServices
import LivelineStoreTestSupport
import LivelineTestSupport
import Testing

/// Answers that say a device token is dead: 410 and 400.
@Suite struct SenderTokenOutcomeTests {
    @Test(arguments: StoreKind.underTest)
    func unregisteredTokenIsDeletedUnlessRegisteredAgainAfterThe410(store: StoreKind) async throws {
        try await withSender(store: store) { harness in
            let goneToken = randomDeviceToken()
            let goneActivity = "r-gone-\(UUID().uuidString.prefix(6))"
            try await harness.register(goneToken, activityID: goneActivity, at: Date().addingTimeInterval(-60))
            // Re-registered "after" the 410: a registration stamped later than APNs' timestamp.
            let backToken = randomDeviceToken()
            let backActivity = "r-back-\(UUID().uuidString.prefix(6))"
            try await harness.register(backToken, activityID: backActivity, at: Date().addingTimeInterval(60))
            harness.simulator.injectFault(.unregistered, forDevice: goneToken)
            harness.simulator.injectFault(.unregistered, forDevice: backToken)

            try await harness.publish([
                makeJob(target: .device(token: goneToken, kind: .update), activityID: goneActivity),
                makeJob(target: .device(token: backToken, kind: .update), activityID: backActivity),
            ])
            try await eventually("the stale token is deleted") {
                try await harness.tokens(of: goneActivity).isEmpty
            }
            try await eventually("both jobs acked") {
                try await harness.messageCount(harness.topology.sendQueues[0]) == 0
            }
            try await Task.sleep(for: .seconds(1.5))  // longer than the retry tier: nothing comes back
            #expect(try await harness.tokens(of: backActivity) == [backToken])
            #expect(harness.simulator.deliveries(toDevice: goneToken).isEmpty)
            #expect(harness.simulator.statistics.responsesByStatus[410] == 2, "each sent once, never retried")
            #expect(try await harness.messageCount(harness.topology.deadQueue) == 0, "a 410 is not a dead letter")
            let trace = try await harness.store.trace(activityID: goneActivity, limit: 10)
            #expect(trace.contains { $0.detail.contains("410 Unregistered; 1 registration") })
        }
    }

    @Test(arguments: [APNsSimulatorFault.badDeviceToken, .deviceTokenNotForTopic])
    func rejectedTokenIsDeletedAndDeadLettered(fault: APNsSimulatorFault) async throws {
        try await withSender { harness in
            let token = randomDeviceToken()
            let activity = "r-bad-\(UUID().uuidString.prefix(6))"
            try await harness.register(token, activityID: activity)
            harness.simulator.injectFault(fault, forDevice: token)
            let job = makeJob(target: .device(token: token, kind: .update), activityID: activity)
            try await harness.publish([job])

            let (letter, headers) = try #require(try await harness.deadLetters(1).first)
            let expected = fault == .badDeviceToken ? "BadDeviceToken" : "DeviceTokenNotForTopic"
            #expect(letter.reason == .apns(expected))
            #expect(letter.jobId == job.jobId)
            #expect(letter.attempts == 1)
            #expect(try PushJob(json: letter.originalBody) == job)
            #expect(headers["x-liveline-reason"]?.stringValue == expected)
            #expect(headers["x-liveline-domain"]?.stringValue == "ride")
            #expect(headers["x-liveline-activity"]?.stringValue == activity)
            #expect(!letter.message.contains(token), "messages hold a token prefix only")
            #expect(try await harness.tokens(of: activity).isEmpty)
        }
    }
}
