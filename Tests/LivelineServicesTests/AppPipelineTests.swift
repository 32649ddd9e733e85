import APNsSimulator
import Foundation
import LivelineAPNs
import LivelineCodecs
import LivelineCore
import LivelineModels
import LivelineProducer
import LivelineServices
import LivelineStore
import LivelineStoreTestSupport
import LivelineTestSupport
import Testing

/// Two apps on one deployment, end to end through a real translator and a real sender to the
/// simulator: the same activity and user ids in each are two rides, each pushed to its own
/// app's devices with its own topic and state, and each with its own trace.
@Suite("Two apps through translator and sender")
struct AppPipelineTests {
    static let rides = TranslatorHarness.bundleId
    static let eats = "com.example.eats"

    @Test(arguments: StoreKind.underTest)
    func theSameActivityIdInTwoAppsIsTwoActivities(store: StoreKind) async throws {
        let translator = Translator(configuration: .standard(bundleId: Self.rides, otherApps: [Self.eats]))
        let keys = translator.configuration.keys
        try await withSender(bundleIDs: [Self.rides, Self.eats], store: store) { sender in
            let activityStore = try #require(sender.store as? any ActivityStore)
            try await TranslatorHarness.run(on: activityStore, topology: sender.topology, translator: translator) { harness, _ in
                let ride = "r-\(UUID().uuidString.prefix(6))"
                let phones = [Self.rides: randomDeviceToken(), Self.eats: randomDeviceToken()]
                // Each app's rider u-1 registered a phone for their ride, as the api files it.
                for (app, token) in phones {
                    _ = try await harness.store.registerUpdateToken(UpdateTokenRegistration(
                        activityID: keys.key(app: app, id: ride), deviceID: "phone", userID: keys.key(app: app, id: "u-1"),
                        token: token, domain: "ride", attributesType: "RideAttributes", at: Date()))
                }
                // Recent: a ride's update older than its stale date would be dropped.
                let now = Date().addingTimeInterval(-5).roundedToMilliseconds
                var state = Events.rideState(.driverEnRoute)
                try await harness.publisher.publish(try .ride(activityId: ride, userId: "u-1", state: state, time: now))
                state.driverName = "Ana"
                try await harness.publisher.publish(
                    try LivelineEvent.ride(activityId: ride, userId: "u-1", state: state, time: now).forApp(Self.eats))
                // An app no domain serves is a dead letter, and touches neither ride.
                let unserved = try LivelineEvent.ride(activityId: ride, userId: "u-1", state: state, time: now.addingTimeInterval(1))
                    .forApp("com.example.nope")
                try await harness.publisher.publish(unserved)

                try await eventually("each app's phone has its push") {
                    phones.values.allSatisfy { sender.simulator.deliveries(toDevice: $0).count == 1 }
                }
                for (app, token) in phones {
                    let push = try #require(sender.simulator.deliveries(toDevice: token).first)
                    #expect(push.topic == "\(app).push-type.liveactivity")
                    let driver = (try? JSONValue.parse(Data(push.payload)))?["aps"]?["content-state"]?["driverName"]
                    #expect(driver == .string(app == Self.eats ? "Ana" : "Maria"), "\(app)")
                    let activity = try #require(try await harness.store.activity(id: keys.key(app: app, id: ride)))
                    #expect(activity.userID == keys.key(app: app, id: "u-1"))
                    // Its own story: its event, and its push's answer once the sender's trace is written.
                    try await eventually("\(app)'s trace") {
                        try await harness.store.trace(activityID: keys.key(app: app, id: ride), limit: 100).contains { $0.kind == .apnsOutcome }
                    }
                    let trace = try await harness.store.trace(activityID: keys.key(app: app, id: ride), limit: 100)
                    #expect(trace.filter { $0.kind == .pushDecided || $0.kind == .eventReceived }.count == 1, "\(trace.map(\.detail))")
                    #expect(trace.allSatisfy { !$0.detail.contains(phones[app == Self.eats ? Self.rides : Self.eats]!.prefix(8)) })
                }
                #expect(try await harness.store.activity(id: keys.key(app: "com.example.nope", id: ride)) == nil)
                let dead = try await harness.control.consume(queue: harness.topology.deadQueue, prefetch: 10)
                let letters = try await receive(1, from: dead)
                for letter in letters { letter.ack() }
                await dead.close()
                let letter = try JSONDecoder().decode(DeadLetter.self, from: try #require(letters.first).body)
                #expect(letter.reason == .unknownApp && letter.eventId == unserved.id)
                #expect(letter.message.contains("does not serve app com.example.nope"))
            }
        }
    }
}
