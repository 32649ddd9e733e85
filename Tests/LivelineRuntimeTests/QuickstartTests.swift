import Foundation
import LivelineAMQP
import LivelineRuntime
import LivelineStore
import LivelineStoreTestSupport
import LivelineTestSupport
import Testing

/// `liveline run` end to end: real RabbitMQ, SQLite, translator, sender and the APNs
/// simulator over HTTP/2 + TLS with signature checks. No part is faked.
@Suite(.timeLimit(.minutes(2)))
struct QuickstartTests {
    /// On both stores: the game's flow needs the store's followers, per-device tokens,
    /// subscriptions and channels.
    @Test(arguments: StoreKind.underTest)
    func everyDeviceGetsItsPushesInOrderAndTheBadEventIsDeadLettered(store kind: StoreKind) async throws {
        try await withBroker {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("quickstart-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let (report, traces) = try await kind.withStore { store in
                let report = try await Quickstart(
                    amqp: try Broker.configuration(), storePath: directory.appendingPathComponent("q.sqlite").path,
                    timeout: .seconds(60)
                ).run(logger: Broker.logger, on: store)
                var traces: [String: [TraceEntry]] = [:]
                for activity in Set(report.devices.map(\.activityID)) {
                    traces[activity] = try await store.trace(activityID: activity, limit: 200)
                }
                return (report, traces)
            }

            #expect(report.succeeded, "\(report)")
            // The sender sends concurrently, so a device may receive one activity's pushes out
            // of order; ActivityKit orders them by aps.timestamp and ignores any that is not
            // newer. So the check is what the device shows: every step, in timestamp order.
            func events(_ index: Int) -> [String] {
                let received = report.devices[index].deliveries.compactMap { delivery -> (Int, String)? in
                    let object = try? JSONSerialization.jsonObject(with: Data(delivery.payload)) as? [String: Any]
                    guard let aps = object?["aps"] as? [String: Any], let timestamp = aps["timestamp"] as? Int else {
                        return nil
                    }
                    let state = aps["content-state"] as? [String: Any]
                    let status = state?["status"] ?? state?["currentStep"] ?? "?"
                    return (timestamp, "\(aps["event"] ?? "?"):\(status):\(delivery.priority)")
                }
                .sorted { $0.0 < $1.0 }
                // An activity started by push-to-start ignores what is older than its start:
                // ActivityKit shows a push only if it is newer. A broadcast sent just before a
                // fan's start can reach the channel just after it (the two go out on different
                // lanes), and the fan's device drops it, as this does.
                guard received.contains(where: { $0.1.hasPrefix("start:") }) else { return received.map(\.1) }
                return received.drop { !$0.1.hasPrefix("start:") }.map(\.1)
            }
            // Every step is a push, unless a newer step overtook it under load: then it is
            // coalesced, and the activity's trace says so (in the translator for the event, or in
            // the sender for the device). What the device shows is the rest, in order, ending
            // with the end.
            func expectSteps(_ index: Int, _ steps: [String], _ what: String, onChannel: Bool = false) {
                let device = report.devices[index]
                let shown = events(index)
                let trace = traces[device.activityID] ?? []
                let coalesced = trace.count { entry in
                    entry.kind == .dropped && entry.detail.contains("superseded")
                        && (entry.detail.hasPrefix("event ") || entry.detail.contains(device.token.prefix(8))
                            || (onChannel && entry.detail.contains(" to channel ")))
                }
                #expect(shown.last == steps.last && Self.isOrderedSubsequence(shown, of: steps), "\(what): \(shown)")
                #expect(shown.count + coalesced == steps.count, "\(what): \(shown.count) shown, \(coalesced) coalesced")
                // What a person notices (alerts, priority 10) is never coalesced away.
                for step in Set(steps) where step.hasSuffix(":10") {
                    #expect(shown.count { $0 == step } == steps.count { $0 == step }, "\(what): \(step) in \(shown)")
                }
            }
            let ride = [
                "update:driverAssigned:5", "update:driverEnRoute:5", "update:driverArrived:10", "update:inProgress:5",
                "update:arriving:5", "end:completed:10",
            ]
            // The iPhone's app is last month's (content-state version 1), which knows no
            // `arriving`: it is sent as `inProgress`, which that app decodes.
            expectSteps(0, ride.map { $0 == "update:arriving:5" ? "update:inProgress:5" : $0 }, "the rider's iPhone")
            // Each device has its own lane in the sender, so a step coalesced for one device may
            // still reach the other: both are checked against the ride and their own traces.
            expectSteps(1, ride, "the rider's iPad")
            for delivery in report.devices[0].deliveries {
                let object = try? JSONSerialization.jsonObject(with: Data(delivery.payload)) as? [String: Any]
                let state = (object?["aps"] as? [String: Any])?["content-state"] as? [String: Any]
                #expect(state?["status"] as? String != "arriving" && state?["distanceRemaining"] == nil, "version 1 form: \(state ?? [:])")
            }
            // The same alert in each device's language: the iPad's app registered German.
            func arrivalTitle(_ index: Int) -> String? {
                for delivery in report.devices[index].deliveries {
                    let object = try? JSONSerialization.jsonObject(with: Data(delivery.payload)) as? [String: Any]
                    let aps = object?["aps"] as? [String: Any]
                    guard (aps?["content-state"] as? [String: Any])?["status"] as? String == "driverArrived" else { continue }
                    return (aps?["alert"] as? [String: Any])?["title"] as? String
                }
                return nil
            }
            #expect(arrivalTitle(0) == "Your driver has arrived")
            #expect(arrivalTitle(1) == "Ihr Fahrer ist da")
            expectSteps(2, ["update:confirmed:5", "update:pickedUp:10", "update:delivering:5", "end:delivered:10"], "the foodie's iPhone")
            // The game: each fan's device is started once, into the game's channel, then shows
            // both goals and the final whistle, as broadcasts; the channel is gone after it.
            // The iOS 17 device is started without the channel and gets the same pushes per token.
            let game = ["start:live:10", "update:live:10", "update:live:10", "end:final:10"]
            for fan in 3...6 {
                expectSteps(fan, game, report.devices[fan].label, onChannel: fan < 6)
                #expect(events(fan).first == "start:live:10")
            }
            let channel = try #require(report.channel)
            #expect(report.devices[3...5].allSatisfy { Quickstart.isStart(into: channel.id, $0.deliveries.first) })
            #expect(Quickstart.isStartWithoutChannel(report.devices[6].deliveries.first))
            #expect(report.devices[6].deliveries.dropFirst().allSatisfy { $0.headers["apns-channel-id"] == nil })
            let gameCoalesced = (traces[report.devices[3].activityID] ?? []).count {
                $0.kind == .dropped && $0.detail.contains("superseded")
                    && ($0.detail.hasPrefix("event ") || $0.detail.contains(" to channel "))
            }
            #expect(channel.broadcasts.count + gameCoalesced == 4, "scheduled, two goals and the final whistle")
            #expect(channel.broadcasts.allSatisfy { $0.headers["apns-expiration"] == "0" })
            #expect(channel.deleted)
            #expect(report.deadLetterReasons == ["invalid-event": 1])
            #expect(report.devices.allSatisfy { $0.deliveries.allSatisfy { $0.pushType == "liveactivity" } })
        }
    }

    /// Whether `shown` is `all` with some elements left out, in the same order.
    static func isOrderedSubsequence(_ shown: [String], of all: [String]) -> Bool {
        var rest = all[...]
        for item in shown {
            guard let found = rest.firstIndex(of: item) else { return false }
            rest = rest[rest.index(after: found)...]
        }
        return true
    }
}
