/// `PUT /v1/push-to-start-tokens/{attributesType}`.
struct PushToStartTokenBody: Decodable {
    /// Hex, from `Activity<Attributes>.pushToStartTokenUpdates`.
    var token: String
    /// `production` (the default: App Store and TestFlight builds) or `sandbox` (builds run
    /// from Xcode, whose tokens only APNs' sandbox accepts).
    var environment: String?
}
