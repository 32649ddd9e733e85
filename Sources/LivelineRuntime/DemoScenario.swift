import Foundation
import LivelineAMQP
import LivelineModels
import LivelineProducer
import LivelineStore

/// The demo producers: a ride, a food delivery and a football game, each told from start
/// to end as its domain service would publish it, plus one malformed event.
struct DemoScenario: Sendable {
    struct DemoDevice: Sendable {
        var label: String
        var token: String
        var activityID: String
    }

    let rideID: String
    let deliveryID: String
    let gameID: String
    let rider: String
    let foodie: String
    let fan: String
    let riderPhone = DemoScenario.token()
    let riderWatch = DemoScenario.token()
    let foodiePhone = DemoScenario.token()
    let fanPhone = DemoScenario.token()

    init(userSuffix: String) {
        rideID = "ride-\(userSuffix)"
        deliveryID = "order-\(userSuffix)"
        gameID = "game-\(userSuffix)"
        rider = "rider-\(userSuffix)"
        foodie = "foodie-\(userSuffix)"
        fan = "fan-\(userSuffix)"
    }

    var devices: [DemoDevice] {
        [
            DemoDevice(label: "ride \(rideID), \(rider)'s iPhone", token: riderPhone, activityID: rideID),
            DemoDevice(label: "ride \(rideID), \(rider)'s iPad", token: riderWatch, activityID: rideID),
            DemoDevice(label: "delivery \(deliveryID), \(foodie)'s iPhone", token: foodiePhone, activityID: deliveryID),
            DemoDevice(label: "game \(gameID), \(fan)'s iPhone (push-to-start)", token: fanPhone, activityID: gameID),
        ]
    }

    /// What the apps would do through the api: the rider's two devices and the foodie's phone
    /// registered update tokens for activities they started; the fan only has a
    /// push-to-start token, so the game's first event starts the activity remotely.
    func registerDevices(in store: any ActivityStore) async throws {
        let now = Date()
        for (device, token) in [("phone", riderPhone), ("ipad", riderWatch)] {
            _ = try await store.registerUpdateToken(
                .init(activityID: rideID, deviceID: device, userID: rider, token: token, domain: "ride",
                      attributesType: "RideAttributes", at: now))
        }
        _ = try await store.registerUpdateToken(
            .init(activityID: deliveryID, deviceID: "phone", userID: foodie, token: foodiePhone, domain: "delivery",
                  attributesType: "DeliveryAttributes", at: now))
        try await store.registerPushToStartToken(
            .init(userID: fan, attributesType: "ScoreAttributes", token: fanPhone, registeredAt: now))
    }

    func publish(with publisher: EventPublisher, badEventTo exchange: String) async throws {
        var time = Date().addingTimeInterval(-120)
        func next() -> Date {
            time.addTimeInterval(1)
            return time
        }
        let eta = Int(Date().timeIntervalSince1970)
        let rideAttributes = RideAttributes(riderName: "Jordan", pickupLocation: "123 Main St", dropoffLocation: "456 Oak Ave")
        let rideSteps: [(RideStatus, Double)] = [
            (.driverAssigned, 3.2), (.driverEnRoute, 1.4), (.driverArrived, 0), (.inProgress, 2.5), (.completed, 0),
        ]
        let delivery = DeliveryAttributes(orderNumber: 4521, restaurantName: "Pizza Place")
        let window = Date().addingTimeInterval(900)...Date().addingTimeInterval(1500)
        let steps: [DeliveryStep] = [.confirmed, .pickedUp, .delivering, .delivered]
        let game = ScoreAttributes(
            gameId: gameID, league: "Premier League", homeTeam: .init(name: "Arsenal", abbreviation: "ARS"),
            awayTeam: .init(name: "Chelsea", abbreviation: "CHE"))

        for index in 0..<max(rideSteps.count, steps.count) {
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
            if index == 0 {
                let state = ScoreAttributes.ContentState(
                    homeScore: 0, awayScore: 0, period: "1st half", clock: "0'", status: .live, lastPlay: "Kick-off")
                events.append(try .score(activityId: gameID, userId: fan, state: state, attributes: game, time: next()))
            }
            try await publisher.publish(contentsOf: events)
            // Paced like real life (compressed), so each step is its own push, not coalesced.
            try await Task.sleep(for: .milliseconds(300))
        }
        // A producer bug: not a CloudEvent at all. It must end in the DLQ, not vanish.
        try await publisher.connection.publish(
            AMQPMessage(exchange: exchange, routingKey: "ride.status", body: Data("{not json".utf8)))
    }

    static func token() -> String {
        (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }
}
