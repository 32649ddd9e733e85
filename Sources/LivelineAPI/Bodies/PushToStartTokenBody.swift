/// `PUT /v1/push-to-start-tokens/{attributesType}`.
struct PushToStartTokenBody: Decodable {
    /// Hex, from `Activity<Attributes>.pushToStartTokenUpdates`.
    var token: String
}
