import Foundation
import LivelineModels

// Tests: none needed (declarations only)

// The model types each typed domain binds to, in one place, with an example of each whose every
// field is set: the start-time check of alert placeholders renders alerts on it.

enum RideModel {
    typealias Attributes = RideAttributes
    typealias State = RideAttributes.ContentState
    static let statuses = RideStatus.allCases.map(\.rawValue)
    static let example = (
        State(driverName: "Maria", driverPhoto: "car.fill", vehicleDescription: "White Toyota Camry", etaStartSeconds: 1,
              etaEndSeconds: 2, status: .driverEnRoute, distanceRemaining: 1.5),
        Attributes(riderName: "Jordan", pickupLocation: "123 Main St", dropoffLocation: "456 Oak Ave"))
}

enum DeliveryModel {
    typealias Attributes = DeliveryAttributes
    typealias State = DeliveryAttributes.ContentState
    static let statuses = DeliveryStep.allCases.map(\.rawValue)
    static let example = (
        State(driverName: "Alex", estimatedDeliveryTime: Date(timeIntervalSinceReferenceDate: 0)...Date(timeIntervalSinceReferenceDate: 1),
              currentStep: .confirmed),
        Attributes(orderNumber: 4521, restaurantName: "Pizza Place"))
}

enum ScoreModel {
    typealias Attributes = ScoreAttributes
    typealias State = ScoreAttributes.ContentState
    static let statuses = GameStatus.allCases.map(\.rawValue)
    static let example = (
        State(homeScore: 1, awayScore: 0, period: "1st half", clock: "23'", status: .live, lastPlay: "Goal"),
        Attributes(gameId: "g-1", league: "Premier League", homeTeam: .init(name: "Arsenal", abbreviation: "ARS"),
                   awayTeam: .init(name: "Chelsea", abbreviation: "CHE")))
}
