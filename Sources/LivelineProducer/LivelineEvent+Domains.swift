import Foundation
import LivelineCodecs
import LivelineCore
import LivelineModels

// Tests: Tests/LivelineProducerTests/LivelineEventTests.swift

extension LivelineEvent {
    /// A ride change. `attributes` is needed once (the first event, or any event) for
    /// push-to-start; `message` fills alert templates such as why a ride failed.
    public static func ride(
        activityId: String, userId: String, state: RideAttributes.ContentState, attributes: RideAttributes? = nil,
        message: String? = nil, name: String = "status", id: String = UUID().uuidString.lowercased(), time: Date = Date()
    ) throws -> LivelineEvent {
        try typed(domain: "ride", name: name, id: id, time: time, activityId: activityId, userId: userId,
                  state: state, attributes: attributes, message: message)
    }

    /// A delivery change.
    public static func delivery(
        activityId: String, userId: String, state: DeliveryAttributes.ContentState, attributes: DeliveryAttributes? = nil,
        message: String? = nil, name: String = "status", id: String = UUID().uuidString.lowercased(), time: Date = Date()
    ) throws -> LivelineEvent {
        try typed(domain: "delivery", name: name, id: id, time: time, activityId: activityId, userId: userId,
                  state: state, attributes: attributes, message: message)
    }

    /// A game's change. A game is shared by its fans, so it names no user. Its start
    /// names `topics` (the teams and the league, as `team:arsenal`): every device of every
    /// follower with a push-to-start token gets the start, and listens to the game's channel.
    public static func score(
        activityId: String, userId: String? = nil, state: ScoreAttributes.ContentState, attributes: ScoreAttributes? = nil,
        topics: [String]? = nil, message: String? = nil, name: String = "status", id: String = UUID().uuidString.lowercased(),
        time: Date = Date()
    ) throws -> LivelineEvent {
        try typed(domain: "score", name: name, id: id, time: time, activityId: activityId, userId: userId,
                  state: state, attributes: attributes, message: message, topics: topics)
    }

    /// A change in a domain configured as data (no Swift model): the content-state and
    /// attributes are passed through, and `status` selects the domain's policy.
    public static func generic(
        domain: String, activityId: String, userId: String, status: String, contentState: JSONValue,
        attributes: JSONValue? = nil, message: String? = nil, name: String = "status",
        id: String = UUID().uuidString.lowercased(), time: Date = Date()
    ) -> LivelineEvent {
        var data: [String: JSONValue] = [
            "activityId": .string(activityId), "userId": .string(userId),
            "status": .string(status), "contentState": contentState,
        ]
        if let attributes { data["attributes"] = attributes }
        if let message { data["message"] = .string(message) }
        return LivelineEvent(id: id, domain: domain, name: name, time: time, data: .object(data))
    }

    private static func typed<State: Encodable, Attributes: Encodable>(
        domain: String, name: String, id: String, time: Date, activityId: String, userId: String?,
        state: State, attributes: Attributes?, message: String?, topics: [String]? = nil
    ) throws -> LivelineEvent {
        var data: [String: JSONValue] = ["activityId": .string(activityId), "contentState": try modelJSON(state)]
        if let userId { data["userId"] = .string(userId) }
        if let topics { data["topics"] = .array(topics.map(JSONValue.string)) }
        if let attributes { data["attributes"] = try modelJSON(attributes) }
        if let message { data["message"] = .string(message) }
        return LivelineEvent(id: id, domain: domain, name: name, time: time, data: .object(data))
    }

    /// The default `JSONEncoder` on purpose: ActivityKit decodes with the defaults, so
    /// dates stay 2001-reference seconds and ranges two-element arrays (DESIGN §3).
    private static func modelJSON(_ model: some Encodable) throws -> JSONValue {
        try JSONValue.parse(JSONEncoder().encode(model))
    }
}
