/// The `aps` members of a Live Activity push other than `content-state` and
/// `attributes`, which are encoded by the domain's model types.
struct APSFields: Hashable, Sendable {
    /// `aps.timestamp`: Unix seconds; ActivityKit ignores a push that is not newer.
    var timestamp: Int64
    var event: PushEvent
    /// Unix seconds.
    var staleDate: Int64?
    var relevanceScore: Double?
    /// Unix seconds; only on `end`.
    var dismissalDate: Int64?
    var alert: RenderedAlert?
    /// Only on `start`.
    var attributesType: String?
    /// Only on `start`: asks iOS 18 to report the new activity's update token.
    var inputPushToken: Bool = false
}

/// An alert after its template was filled in.
struct RenderedAlert: Hashable, Sendable, Encodable {
    var title: String
    var body: String
    var sound: String?
}

/// The JSON body of a Live Activity push, generic over the model types so that
/// `content-state` and `attributes` are encoded by the domain's own `Codable`.
struct LiveActivityPayload<State: Encodable, Attributes: Encodable>: Encodable {
    var fields: APSFields
    var contentState: State
    var attributes: Attributes?

    private enum RootKeys: String, CodingKey { case aps }
    private enum APSKeys: String, CodingKey {
        case timestamp, event, alert, attributes
        case contentState = "content-state"
        case staleDate = "stale-date"
        case relevanceScore = "relevance-score"
        case dismissalDate = "dismissal-date"
        case attributesType = "attributes-type"
        case inputPushToken = "input-push-token"
    }

    func encode(to encoder: any Encoder) throws {
        var root = encoder.container(keyedBy: RootKeys.self)
        var aps = root.nestedContainer(keyedBy: APSKeys.self, forKey: .aps)
        try aps.encode(fields.timestamp, forKey: .timestamp)
        try aps.encode(fields.event, forKey: .event)
        try aps.encode(contentState, forKey: .contentState)
        try aps.encodeIfPresent(fields.staleDate, forKey: .staleDate)
        try aps.encodeIfPresent(fields.relevanceScore, forKey: .relevanceScore)
        try aps.encodeIfPresent(fields.dismissalDate, forKey: .dismissalDate)
        try aps.encodeIfPresent(fields.alert, forKey: .alert)
        if fields.event == .start {
            try aps.encodeIfPresent(fields.attributesType, forKey: .attributesType)
            try aps.encodeIfPresent(attributes, forKey: .attributes)
        }
        if fields.inputPushToken {
            try aps.encode(1, forKey: .inputPushToken)
        }
    }
}
