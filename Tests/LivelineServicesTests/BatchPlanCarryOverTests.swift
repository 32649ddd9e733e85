import Foundation
import LivelineCore
import LivelineProducer
import LivelineStore
import Testing

@testable import LivelineServices

/// The translator plans batch N+1 while batch N's transaction runs, so N+1 may load state
/// without N's changes. Planned on N's carry-over, it must decide exactly what one batch
/// holding both would have decided; and where the store shows another worker's newer
/// state, that state wins.
@Suite struct BatchPlanCarryOverTests {
    static let translator = TranslatorHarness.translator
    static let now = Date()
    static let rideType = translator.domain(named: "ride")?.attributesType ?? ""

    /// r-1 has a registered device; r-2 and r-3 belong to the same user, who has one
    /// push-to-start token for rides.
    static let storedBeforeEither: [String: StoredActivity] = {
        let start = PushToStartToken(userID: "u-9", attributesType: rideType, token: Events.startToken, registeredAt: Events.base)
        return [
            "r-1": StoredActivity(
                activity: ActivityRecord(id: "r-1", domain: "ride", attributesType: rideType, userID: "u-9"),
                updateTokens: [UpdateToken(activityID: "r-1", deviceID: "d-1", token: Events.tokenA, registeredAt: Events.base)],
                pushToStartTokens: [start], preferences: .defaults),
            "r-2": StoredActivity(activity: nil, updateTokens: [], pushToStartTokens: [start], preferences: .defaults),
            "r-3": StoredActivity(activity: nil, updateTokens: [], pushToStartTokens: [start], preferences: .defaults),
        ]
    }()

    static func events(_ events: [LivelineEvent]) throws -> [DomainEvent] {
        try events.map { try translator.parse(try $0.encoded(source: "//tests.liveline")) }
    }

    static func plan(_ events: [DomainEvent], stored: [String: StoredActivity], after previous: BatchPlan.CarryOver? = nil) -> BatchPlan {
        var plan = BatchPlan(translator: translator, stored: stored, now: now, after: previous)
        for event in events { plan.translate(event, body: Data(), redelivered: false) }
        return plan
    }

    /// Each decision with the exact pushes it makes.
    static func decisions(_ plan: BatchPlan) -> [String] {
        plan.entries.map { entry in
            switch entry.decision {
            case .send(let send):
                "\(entry.event.id) send " + send.jobs.map { "\($0.priority) \(String(decoding: $0.payload, as: UTF8.self))" }
                    .joined(separator: " | ")
            case .drop(let drop): "\(entry.event.id) drop \(drop.reason.rawValue)"
            case .deadLetter(let rejection): "\(entry.event.id) dead-letter \(rejection.reason.rawValue)"
            }
        }
    }

    @Test func aBatchPlannedOnTheCarryOverDecidesAsOneBatchWould() throws {
        let first = try Self.events([
            try Events.ride("r-1", .driverEnRoute, at: 1),
            try Events.ride("r-1", .driverArrived, at: 2),
            try Events.ride("r-2", .driverEnRoute, at: 3, attributes: true),
        ])
        let second = try Self.events([
            try Events.ride("r-1", .driverArrived, at: 2, id: "r-1-duplicate"),
            try Events.ride("r-1", .inProgress, at: 4),
            try Events.ride("r-1", .completed, at: 5),
            try Events.ride("r-1", .inProgress, at: 6),
            try Events.ride("r-2", .driverArrived, at: 7),
            try Events.ride("r-3", .driverEnRoute, at: 8, attributes: true),
        ])
        let whole = Self.decisions(Self.plan(first + second, stored: Self.storedBeforeEither))

        let firstPlan = Self.plan(first, stored: Self.storedBeforeEither)
        // The second batch loaded before the first one's transaction was visible.
        let secondPlan = Self.plan(second, stored: Self.storedBeforeEither, after: firstPlan.carryOver)
        #expect(Self.decisions(firstPlan) + Self.decisions(secondPlan) == whole)

        // What the carry-over is for: without it, the second batch would alert again and
        // start r-2 a second time. The user's one push-to-start token starts r-2 and r-3 once each.
        let uninformed = Self.plan(second, stored: Self.storedBeforeEither)
        #expect(Self.decisions(firstPlan) + Self.decisions(uninformed) != whole)
        let starts = whole.filter { $0.contains("\"event\":\"start\"") }
        #expect(starts.count == 2 && starts.contains { $0.hasPrefix("r-2-") } && starts.contains { $0.hasPrefix("r-3-") }, "\(whole)")
    }

    @Test func theStoreWinsWhereAnotherWorkerWroteNewerOrEnded() throws {
        let firstPlan = Self.plan(try Self.events([try Events.ride("r-1", .driverEnRoute, at: 1)]), stored: Self.storedBeforeEither)
        let next = try Self.events([try Events.ride("r-1", .driverArrived, at: 3)])

        func stored(lastEventAt seconds: Double, status: String, ended: Bool) -> [String: StoredActivity] {
            var stored = Self.storedBeforeEither
            stored["r-1"]?.activity = ActivityRecord(
                id: "r-1", domain: "ride", attributesType: Self.rideType, userID: "u-9",
                contentState: String(decoding: try! JSONEncoder().encode(Events.rideState(.driverArrived)), as: UTF8.self),
                lastEventAt: Events.base.addingTimeInterval(seconds), startedAt: Events.base,
                endedAt: ended ? Events.base.addingTimeInterval(seconds) : nil, endReason: ended ? "cancelled" : nil,
                lastEventID: "elsewhere", lastStatus: status)
            return stored
        }

        // Another worker ended the activity at 2 s: nothing more is sent.
        let afterEnd = Self.plan(next, stored: stored(lastEventAt: 2, status: "cancelled", ended: true), after: firstPlan.carryOver)
        #expect(Self.decisions(afterEnd) == ["r-1-driverArrived-3 drop \(DropReason.afterEnd.rawValue)"])

        // Another worker stored a newer event (4 s): this one is stale.
        let stale = Self.plan(next, stored: stored(lastEventAt: 4, status: "driverArrived", ended: false), after: firstPlan.carryOver)
        #expect(Self.decisions(stale) == ["r-1-driverArrived-3 drop \(DropReason.stale.rawValue)"])
    }
}
