import Foundation
import LivelineModels
import LivelineProducer

/// Realistic traffic: activities of the three domains, each receiving its events in
/// time order, interleaved round-robin the way many concurrent rides, orders and games
/// would arrive. No event ends an activity, so every event yields exactly one job.
enum BenchEvents {
    static func domain(of activity: Int) -> String { ["ride", "delivery", "score"][activity % 3] }
    static func activityId(_ activity: Int) -> String { "\(domain(of: activity))-\(activity)" }
    static func userId(_ activity: Int) -> String { "u-\(activity % 5_000)" }
    static func token(_ activity: Int) -> String { String(format: "%064x", activity + 1) }

    /// Event `index` of `count`, spread over `activities`.
    static func event(_ index: Int, activities: Int, base: Date) throws -> LivelineEvent {
        let activity = index % activities
        let step = index / activities
        // Ten seconds apart per activity, and a millisecond offset so activities differ.
        let time = base.addingTimeInterval(Double(step) * 10 + Double(activity % 1000) / 1000)
        let id = "bench-\(index)"
        let activityId = activityId(activity)
        let userId = userId(activity)
        switch activity % 3 {
        case 0:
            let statuses: [RideStatus] = [.driverAssigned, .driverEnRoute, .driverEnRoute, .driverEnRoute, .driverArrived, .inProgress]
            let status = step < statuses.count ? statuses[step] : (step % 7 == 0 ? .arriving : .inProgress)
            let eta = Int(base.timeIntervalSince1970) + 900
            let state = RideAttributes.ContentState(
                driverName: "Maria", driverPhoto: "car.fill", vehicleDescription: "White Toyota Camry",
                etaStartSeconds: eta - step * 30, etaEndSeconds: eta + 300 - step * 30, status: status,
                distanceRemaining: max(0, 5.0 - Double(step) * 0.4))
            let attributes = step == 0
                ? RideAttributes(riderName: "Jordan", pickupLocation: "123 Main St", dropoffLocation: "456 Oak Ave") : nil
            return try .ride(activityId: activityId, userId: userId, state: state, attributes: attributes, id: id, time: time)
        case 1:
            let steps: [DeliveryStep] = [.confirmed, .preparing, .preparing, .pickedUp]
            let current = step < steps.count ? steps[step] : .delivering
            let eta = base.addingTimeInterval(1_800 - Double(step) * 20)
            let state = DeliveryAttributes.ContentState(
                driverName: "Alex", estimatedDeliveryTime: eta...eta.addingTimeInterval(600), currentStep: current)
            let attributes = step == 0 ? DeliveryAttributes(orderNumber: 4521 + activity, restaurantName: "Pasta Place") : nil
            return try .delivery(activityId: activityId, userId: userId, state: state, attributes: attributes, id: id, time: time)
        default:
            let state = ScoreAttributes.ContentState(
                homeScore: step / 4, awayScore: step / 5, period: step < 6 ? "1st" : "2nd",
                clock: "\(10 + step * 3):00", status: step == 0 ? .scheduled : .live,
                lastPlay: step % 4 == 0 && step > 0 ? "Goal!" : nil)
            let attributes = step == 0
                ? ScoreAttributes(gameId: "g-\(activity)", league: "EPL",
                                  homeTeam: .init(name: "Arsenal", abbreviation: "ARS"),
                                  awayTeam: .init(name: "Chelsea", abbreviation: "CHE")) : nil
            return try .score(activityId: activityId, userId: userId, state: state, attributes: attributes, id: id, time: time)
        }
    }
}
