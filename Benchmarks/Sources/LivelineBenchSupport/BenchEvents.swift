import Foundation
import LivelineCore
import LivelineModels
import LivelineProducer

// Tests: scripts/bench-smoke

/// Realistic traffic: activities of the three domains, each receiving its events in
/// time order, interleaved round-robin the way many concurrent rides, orders and games
/// would arrive. No event ends an activity, so every event yields exactly one job.
///
/// `run` keeps the ids and tokens of two runs on one store apart (empty: the plain ids).
public struct BenchEvents: Sendable {
    public var run: String
    private let tokenSeed: UInt32

    public init(run: String = "") {
        self.run = run
        tokenSeed = run.isEmpty ? 0 : UInt32.random(in: 1...UInt32.max)
    }

    /// The standard domains, except that a score activity is one user's, on device tokens:
    /// the benchmarks give every activity one device, so each event is one job and one push
    /// the loss ledger can follow. (A game for many fans has a benchmark of its own.)
    public static func translatorConfiguration(bundleId: String = "com.example.liveline") -> TranslatorConfiguration {
        var configuration = TranslatorConfiguration.standard(bundleId: bundleId)
        configuration.domains = configuration.domains.map { domain in
            var domain = domain
            if domain.name == "score" {
                domain.shared = false
                domain.delivery = .deviceTokens
            }
            return domain
        }
        return configuration
    }

    public static func domain(of activity: Int) -> String { ["ride", "delivery", "score"][activity % 3] }
    public static func attributesType(of activity: Int) -> String {
        ["RideAttributes", "DeliveryAttributes", "ScoreAttributes"][activity % 3]
    }
    public func activityId(_ activity: Int) -> String { "\(run)\(Self.domain(of: activity))-\(activity)" }
    public func userId(_ activity: Int) -> String { "\(run)u-\(activity % 5_000)" }
    public func token(_ activity: Int) -> String { String(format: "%08x%056x", tokenSeed, activity + 1) }
    public func eventId(_ index: Int) -> String { "\(run)bench-\(index)" }

    /// Event `index`, spread round-robin over `activities`: activity `index % activities`,
    /// its step `index / activities`.
    public func event(_ index: Int, activities: Int, base: Date) throws -> LivelineEvent {
        let activity = index % activities
        let step = index / activities
        // Ten seconds apart per activity, and a millisecond offset so activities differ.
        let time = base.addingTimeInterval(Double(step) * 10 + Double(activity % 1000) / 1000)
        return try event(index, activities: activities, at: time, base: base)
    }

    /// Event `index` at `time`, which must rise with the index within an activity.
    public func event(_ index: Int, activities: Int, at time: Date, base: Date) throws -> LivelineEvent {
        let activity = index % activities
        let step = index / activities
        let id = eventId(index)
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
