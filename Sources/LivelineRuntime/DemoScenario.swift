import Foundation
import LivelineAMQP
import LivelineModels
import LivelineProducer
import LivelineStore

// Tests: Tests/LivelineRuntimeTests/QuickstartTests.swift, Tests/LivelineRuntimeTests/LivelineExecutableTests.swift

/// The demo producers: a ride, a food delivery and a football game, each told from start
/// to end as its domain service would publish it, plus one malformed event.
///
/// The game is shared by its fans: they follow teams, its start reaches every device of
/// every follower by push-to-start into the game's broadcast channel, and every goal and
/// the final whistle is one broadcast.
struct DemoScenario: Sendable {
    struct DemoDevice: Sendable {
        var label: String
        var token: String
        var activityID: String
        /// A fan's device, started by the game rather than by its app.
        var isFan = false
        /// A fan's device on iOS 18 or later, which listens to the game's channel; an older
        /// one is updated per token.
        var listensOnChannel = false
    }

    let rideID: String
    let deliveryID: String
    let gameID: String
    let rider: String
    let foodie: String
    let fans: [String]
    let riderPhone = DemoScenario.token()
    let riderWatch = DemoScenario.token()
    let foodiePhone = DemoScenario.token()
    /// Two devices of the first fan, one of the second, and the third fan's older iPhone.
    let fanDevices = [DemoScenario.token(), DemoScenario.token(), DemoScenario.token(), DemoScenario.token()]
    /// What the game's start names: whoever follows one of them is started.
    static let gameTopics = ["team:arsenal", "team:chelsea", "league:premier-league"]

    init(userSuffix: String) {
        rideID = "ride-\(userSuffix)"
        deliveryID = "order-\(userSuffix)"
        gameID = "game-\(userSuffix)"
        rider = "rider-\(userSuffix)"
        foodie = "foodie-\(userSuffix)"
        fans = ["fan-a-\(userSuffix)", "fan-b-\(userSuffix)", "fan-c-\(userSuffix)"]
    }

    var devices: [DemoDevice] {
        [
            DemoDevice(
                label: "ride \(rideID), \(rider)'s iPhone (last month's app: content-state version 1)", token: riderPhone,
                activityID: rideID),
            DemoDevice(label: "ride \(rideID), \(rider)'s iPad (reads German)", token: riderWatch, activityID: rideID),
            DemoDevice(label: "delivery \(deliveryID), \(foodie)'s iPhone", token: foodiePhone, activityID: deliveryID),
            DemoDevice(
                label: "game \(gameID), \(fans[0])'s iPhone (follows Arsenal)", token: fanDevices[0], activityID: gameID,
                isFan: true, listensOnChannel: true),
            DemoDevice(
                label: "game \(gameID), \(fans[0])'s iPad (follows Arsenal)", token: fanDevices[1], activityID: gameID,
                isFan: true, listensOnChannel: true),
            DemoDevice(
                label: "game \(gameID), \(fans[1])'s iPhone (follows Chelsea and the league)", token: fanDevices[2],
                activityID: gameID, isFan: true, listensOnChannel: true),
            DemoDevice(
                label: "game \(gameID), \(fans[2])'s iPhone on iOS 17.4 (follows the league; updated per token)",
                token: fanDevices[3], activityID: gameID, isFan: true),
        ]
    }

    /// What the apps would do through the api: the rider's two devices (one in German, one with
    /// last month's app, which knows no `arriving` and is sent it as `inProgress`) and the
    /// foodie's phone registered update tokens for activities they started; each fan's devices registered
    /// push-to-start tokens, and the fans follow their teams (the second fan follows two of
    /// the game's topics, and still gets one start per device).
    func registerDevices(in store: any ActivityStore) async throws {
        let now = Date()
        for (device, token, locale, version) in [("phone", riderPhone, "en_GB", 1), ("ipad", riderWatch, "de-DE", 2)] {
            _ = try await store.registerUpdateToken(
                .init(activityID: rideID, deviceID: device, userID: rider, token: token, locale: locale, contentVersion: version,
                      domain: "ride", attributesType: "RideAttributes", at: now))
        }
        _ = try await store.registerUpdateToken(
            .init(activityID: deliveryID, deviceID: "phone", userID: foodie, token: foodiePhone, domain: "delivery",
                  attributesType: "DeliveryAttributes", at: now))
        let starts = [
            (fans[0], "phone", fanDevices[0], "18.1"), (fans[0], "ipad", fanDevices[1], "18.1"), (fans[1], "phone", fanDevices[2], "18.1"),
            (fans[2], "phone", fanDevices[3], "17.4"),
        ]
        for (fan, device, token, osVersion) in starts {
            try await store.registerPushToStartToken(.init(
                userID: fan, attributesType: "ScoreAttributes", deviceID: device, token: token, registeredAt: now, osVersion: osVersion))
        }
        _ = try await store.follow(userID: fans[0], topic: "team:arsenal", at: now)
        _ = try await store.follow(userID: fans[1], topic: "team:chelsea", at: now)
        _ = try await store.follow(userID: fans[1], topic: "league:premier-league", at: now)
        _ = try await store.follow(userID: fans[2], topic: "league:premier-league", at: now)
    }

    /// What the iOS 17 fan's app does once the game started on it: it cannot listen to the
    /// channel, so it subscribes the new activity's update token, as `PUT
    /// /v1/activities/<game>/tokens/<device>` stores it for a shared activity.
    func subscribeOlderDevice(in store: any ActivityStore) async throws {
        _ = try await store.registerUpdateToken(.init(
            activityID: gameID, deviceID: "\(fans[2])/phone", userID: "", token: fanDevices[3], domain: "score",
            attributesType: "ScoreAttributes", at: Date()))
    }

    /// - Parameter olderDeviceStarted: returns once the game's start reached the iOS 17 fan's
    ///   phone, when the caller can see it: its app has no update token before that. Without
    ///   it, the pause between steps stands in.
    func publish(
        with publisher: EventPublisher, badEventTo exchange: String, store: any ActivityStore,
        olderDeviceStarted: () async -> Void = {}
    ) async throws {
        var time = Date().addingTimeInterval(-120)
        func next() -> Date {
            time.addTimeInterval(1)
            return time
        }
        let eta = Int(Date().timeIntervalSince1970)
        let rideAttributes = RideAttributes(riderName: "Jordan", pickupLocation: "123 Main St", dropoffLocation: "456 Oak Ave")
        let rideSteps: [(RideStatus, Double)] = [
            (.driverAssigned, 3.2), (.driverEnRoute, 1.4), (.driverArrived, 0), (.inProgress, 2.5), (.arriving, 0.3),
            (.completed, 0),
        ]
        let delivery = DeliveryAttributes(orderNumber: 4521, restaurantName: "Pizza Place")
        let window = Date().addingTimeInterval(900)...Date().addingTimeInterval(1500)
        let steps: [DeliveryStep] = [.confirmed, .pickedUp, .delivering, .delivered]
        let game = ScoreAttributes(
            gameId: gameID, league: "Premier League", homeTeam: .init(name: "Arsenal", abbreviation: "ARS"),
            awayTeam: .init(name: "Chelsea", abbreviation: "CHE"))

        // The game: its channel opens with the first event; kick-off starts it on every
        // fan's device; two goals and the final whistle are broadcasts.
        let gameSteps: [(ScoreAttributes.ContentState, [String]?)] = [
            (.init(homeScore: 0, awayScore: 0, period: "1st half", clock: "0'", status: .scheduled, lastPlay: nil), nil),
            (.init(homeScore: 0, awayScore: 0, period: "1st half", clock: "0'", status: .live, lastPlay: "Kick-off"), Self.gameTopics),
            (.init(homeScore: 1, awayScore: 0, period: "1st half", clock: "23'", status: .live, lastPlay: "Goal: Saka"), nil),
            (.init(homeScore: 1, awayScore: 1, period: "2nd half", clock: "67'", status: .live, lastPlay: "Goal: Palmer"), nil),
            (.init(homeScore: 2, awayScore: 1, period: "2nd half", clock: "90'", status: .final, lastPlay: "Full time"), nil),
        ]
        for index in 0..<max(rideSteps.count, steps.count, gameSteps.count) {
            var events: [LivelineEvent] = []
            if index < rideSteps.count {
                let (status, miles) = rideSteps[index]
                let state = RideAttributes.ContentState(
                    driverName: "Maria", driverPhoto: "car.fill", vehicleDescription: "White Toyota Camry",
                    etaStartSeconds: eta + 120, etaEndSeconds: eta + 420, status: status, distanceRemaining: miles)
                events.append(try .ride(activityId: rideID, userId: rider, state: state, attributes: rideAttributes, time: next()))
            }
            if index < steps.count {
                let state = DeliveryAttributes.ContentState(driverName: "Alex", estimatedDeliveryTime: window, currentStep: steps[index])
                events.append(try .delivery(activityId: deliveryID, userId: foodie, state: state, attributes: delivery, time: next()))
            }
            if index < gameSteps.count {
                let (state, topics) = gameSteps[index]
                events.append(try .score(
                    activityId: gameID, state: state, attributes: index < 2 ? game : nil, topics: topics, time: next()))
            }
            try await publisher.publish(contentsOf: events)
            // Paced like real life (compressed), so each step is its own push, not coalesced.
            try await Task.sleep(for: .milliseconds(300))
            if index == 1 {
                await olderDeviceStarted()
                try await subscribeOlderDevice(in: store)
            }
        }
        // A producer bug: not a CloudEvent at all. It must end in the DLQ, not vanish.
        try await publisher.connection.publish(
            AMQPMessage(exchange: exchange, routingKey: "ride.status", body: Data("{not json".utf8)))
    }

    static func token() -> String {
        (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }
}
