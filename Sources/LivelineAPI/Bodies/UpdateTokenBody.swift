// Tests: Tests/LivelineAPITests/TokenRouteTests.swift

/// `PUT /v1/activities/{activityId}/tokens/{deviceId}`.
struct UpdateTokenBody: Decodable {
    /// Hex, from `Activity.pushTokenUpdates`.
    var token: String
    /// `production` (the default: App Store and TestFlight builds) or `sandbox` (builds run
    /// from Xcode, whose tokens only APNs' sandbox accepts).
    var environment: String?
    /// The app's locale (`Locale.current.identifier`: `de_AT`, or `de-AT`): an alert with a
    /// text per language is sent in its language. Absent: the domain's fallback language.
    var locale: String?
    /// The content-state version the app was built with (its model's `contentStateVersion`):
    /// each push carries the newest state it decodes. Absent: the domain's current version.
    /// Read as any number, so that `2.5` gets the field's own error: `JSONDecoder` reports a
    /// fraction where an `Int` is due as a body that is not JSON at all.
    var contentStateVersion: Double?
    /// Recorded if this registration creates the activity's row.
    var domain: String?
    /// Recorded if this registration creates the activity's row.
    var attributesType: String?
}
