// Tests: Tests/LivelineAPITests/TokenRouteTests.swift

/// `PUT /v1/activities/{activityId}/tokens/{deviceId}`.
struct UpdateTokenBody: Decodable {
    /// Hex, from `Activity.pushTokenUpdates`.
    var token: String
    /// `production` (the default: App Store and TestFlight builds) or `sandbox` (builds run
    /// from Xcode, whose tokens only APNs' sandbox accepts).
    var environment: String?
    /// Recorded if this registration creates the activity's row.
    var domain: String?
    /// Recorded if this registration creates the activity's row.
    var attributesType: String?
}
