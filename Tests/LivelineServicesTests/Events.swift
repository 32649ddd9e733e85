import Foundation
import LivelineCore
import LivelineModels
import LivelineProducer

/// Realistic events and the core's expected output for them.
enum Events {
    static let tokenA = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
    static let startToken = "5747415254544f4b454e5f52494445525f3130303030303030303030303030"

    /// A few minutes ago on a whole second plus 120 ms, so every event is inside the 8-hour
    /// lifetime and each one falls in its own second.
    static let base = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 600).rounded(.down) + 0.120)

    /// A generic domain, configured purely as data: flights. Boarding buzzes once.
    static let flight = DomainConfiguration(
        name: "flight", kind: .generic, attributesType: "FlightAttributes", bundleId: TranslatorHarness.bundleId,
        policy: DomainPolicy(
            staleAfterSeconds: 1_800,
            statuses: [
                "boarding": StatusPolicy(alert: AlertTemplate(title: "Boarding", body: "Gate {gate}"), priority: .high),
                "landed": StatusPolicy(isTerminal: true, dismissal: .immediate),
            ]
        )
    )

    /// A generic domain whose every update goes at priority 10, on a budget small enough to
    /// pass in a test: two an hour, a hard cap at four.
    static let alarm = DomainConfiguration(
        name: "alarm", kind: .generic, attributesType: "AlarmAttributes", bundleId: TranslatorHarness.bundleId,
        policy: DomainPolicy(
            staleAfterSeconds: 1_800, routinePriority: .high,
            statuses: ["ringing": StatusPolicy(priority: .high)],
            budget: BudgetPolicy(priority10PerHour: 2, priority10PerHourFrequent: 2, hardCapPerHour: 4, hardCapPerHourFrequent: 4)
        )
    )

    static func alarm(_ activity: String, ring: Int, at time: Date) -> LivelineEvent {
        .generic(
            domain: "alarm", activityId: activity, userId: "u-9", status: "ringing",
            contentState: .object(["status": .string("ringing"), "ring": .integer(Int64(ring))]),
            id: "\(activity)-\(ring)", time: time)
    }

    static func flight(_ activity: String, _ status: String, gate: String, at seconds: Double) -> LivelineEvent {
        .generic(
            domain: "flight", activityId: activity, userId: "u-9", status: status,
            contentState: .object(["status": .string(status), "gate": .string(gate)]),
            id: "\(activity)-\(status)-\(Int(seconds))", time: base.addingTimeInterval(seconds))
    }

    static let rideAttributes = RideAttributes(riderName: "Jordan", pickupLocation: "123 Main St", dropoffLocation: "456 Oak Ave")

    static func rideState(_ status: RideStatus, distance: Double = 3.2) -> RideAttributes.ContentState {
        let eta = Int(base.timeIntervalSince1970) + 600
        return RideAttributes.ContentState(
            driverName: "Maria", driverPhoto: "car.fill", vehicleDescription: "White Toyota Camry",
            etaStartSeconds: eta, etaEndSeconds: eta + 300, status: status, distanceRemaining: distance)
    }

    static func ride(
        _ activity: String, user: String = "u-9", _ status: RideStatus, at seconds: Double,
        attributes: Bool = false, id: String? = nil
    ) throws -> LivelineEvent {
        try .ride(
            activityId: activity, userId: user, state: rideState(status), attributes: attributes ? rideAttributes : nil,
            id: id ?? "\(activity)-\(status.rawValue)-\(Int(seconds))", time: base.addingTimeInterval(seconds))
    }

    /// `steps` routine updates of each activity (user u-1), one second apart, interleaved
    /// step by step; the newest state of each comes at `base + steps - 1` seconds. With
    /// `attributes`, each carries them, so none is coalesced away.
    static func interleavedRides(_ activities: [String], steps: Int, attributes: Bool = false) throws -> [LivelineEvent] {
        try (0..<steps).flatMap { step in
            try activities.map { activity in
                try LivelineEvent.ride(
                    activityId: activity, userId: "u-1", state: rideState(.driverEnRoute, distance: Double(steps - step)),
                    attributes: attributes ? rideAttributes : nil,
                    id: "\(activity)-\(step)", time: base.addingTimeInterval(Double(step)))
            }
        }
    }

    /// The job sequence (the event time in milliseconds) of the newest state
    /// ``interleavedRides(_:steps:)`` sends each activity.
    static func newestSequence(steps: Int) -> Int64 {
        Int64(((base.timeIntervalSince1970 + Double(steps - 1)) * 1000).rounded())
    }

    /// What the core decides for a sequence of events of one activity, starting from no
    /// stored state: the jobs each one should produce.
    static func expectedJobs(_ events: [LivelineEvent], tokens: TokenSnapshot) throws -> [[PushJob]] {
        let translator = TranslatorHarness.translator
        var snapshot: ActivitySnapshot?
        var budget = BudgetUsage.empty
        var result: [[PushJob]] = []
        for event in events {
            let parsed = try translator.parse(try event.encoded(source: "//tests.liveline"))
            let decision = translator.translate(
                event: parsed, activity: snapshot, tokens: tokens, preferences: UserPreferences(), budget: budget, now: Date())
            switch decision {
            case .send(let send):
                snapshot = send.newSnapshot
                budget = send.newBudget
                result.append(send.jobs)
            case .drop(let drop):
                snapshot = drop.newSnapshot ?? snapshot
                result.append([])
            case .deadLetter:
                result.append([])
            }
        }
        return result
    }
}
