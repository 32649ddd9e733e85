import Foundation
import LivelineCore
import LivelineModels
import Testing

/// What the translator sends decodes into the shared models exactly as an app
/// decodes it: default `JSONDecoder`, Date as 2001-reference seconds, ranges as arrays.
@Suite("Model round trip")
struct RoundTripTests {
    struct Push<State: Decodable, Attributes: Decodable>: Decodable {
        struct APS: Decodable {
            var contentState: State
            var attributes: Attributes?
            enum CodingKeys: String, CodingKey {
                case contentState = "content-state"
                case attributes
            }
        }
        var aps: APS
    }

    @Test func deliveryPayloadDecodesWithDatesAsInTheEvent() throws {
        let payload = try Fixtures.goldenPayload("delivery-start-push-to-start")
        let push = try JSONDecoder().decode(Push<DeliveryAttributes.ContentState, DeliveryAttributes>.self, from: payload)
        // The event said [816949500, 816950100] reference seconds = 10:25 and 10:35 UTC.
        #expect(push.aps.contentState.estimatedDeliveryTime.lowerBound == Date(timeIntervalSince1970: 1_795_256_700))
        #expect(push.aps.contentState.estimatedDeliveryTime.upperBound == Date(timeIntervalSince1970: 1_795_257_300))
        #expect(push.aps.contentState.currentStep == .confirmed)
        #expect(push.aps.attributes == DeliveryAttributes(orderNumber: 4521, restaurantName: "Pizza Place"))
    }

    @Test(arguments: ["ride-1-assigned-update", "ride-3-arrived", "ride-4-completed-end-after-1h", "ride-start-push-to-start"])
    func ridePayloadsDecode(golden: String) throws {
        let push = try JSONDecoder().decode(Push<RideAttributes.ContentState, RideAttributes>.self, from: Fixtures.goldenPayload(golden))
        #expect(push.aps.contentState.driverName == "Maria")
    }

    @Test(arguments: ["score-2-kickoff", "score-4-goal", "score-5-final-end-after-30m"])
    func scorePayloadsDecode(golden: String) throws {
        let push = try JSONDecoder().decode(Push<ScoreAttributes.ContentState, ScoreAttributes>.self, from: Fixtures.goldenPayload(golden))
        #expect(push.aps.contentState.period.isEmpty == false)
    }

    @Test func typedContentStateIsCanonicalized() throws {
        // Extra keys are dropped (the app's model would ignore them anyway, and they
        // cost payload bytes); 2.0 and 2 encode the same.
        let body = try Fixtures.eventBody("ride-eta-tick")
        var text = String(decoding: body, as: UTF8.self)
        text = text.replacingOccurrences(of: #""distanceRemaining": 2.5"#, with: #""distanceRemaining": 2.0, "debug": "x""#)
        let event = try Fixtures.translator.parse(Data(text.utf8))
        #expect(event.contentState["debug"] == nil)
        #expect(event.contentState["distanceRemaining"] == .integer(2))
    }

    @Test func eventForAnUnconfiguredDomainIsRejectedNotCrashed() throws {
        var event = try Fixtures.event("ride-arrived")
        event.domain = "unknown"
        let decision = Fixtures.translator.translate(
            event: event, activity: nil, tokens: TokenSnapshot(updateTokens: [Fixtures.tokenA]),
            preferences: UserPreferences(), budget: .empty, now: Fixtures.base
        )
        guard case .deadLetter(let rejection) = decision else { Issue.record("got \(decision)"); return }
        #expect(rejection.reason == .invalidEvent)
    }

    @Test func snapshotsRoundTripThroughJSON() throws {
        var run = ActivityRun()
        _ = try run.apply("ride-assigned")
        let snapshot = try #require(run.snapshot)
        #expect(try JSONDecoder().decode(ActivitySnapshot.self, from: JSONEncoder().encode(snapshot)) == snapshot)
    }
}
