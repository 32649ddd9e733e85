// Tests: Tests/LivelineAPITests/TokenRouteTests.swift

/// `PUT /v1/push-to-start-tokens/{attributesType}/{deviceId}` (or without the device id,
/// for the device `default`).
struct PushToStartTokenBody: Decodable {
    /// Hex, from `Activity<Attributes>.pushToStartTokenUpdates`.
    var token: String
    /// `production` (the default: App Store and TestFlight builds) or `sandbox` (builds run
    /// from Xcode, whose tokens only APNs' sandbox accepts).
    var environment: String?
    /// The device's iOS version (`18.1`): channels reach iOS 18 and later, so an older device
    /// is started without `input-push-channel` and updated per token. Absent: current iOS.
    var osVersion: String?
    /// The app's locale (`Locale.current.identifier`: `de_AT`, or `de-AT`): an alert with a
    /// text per language is sent in its language. Absent: the domain's fallback language.
    var locale: String?
    /// The content-state version the app was built with (its model's `contentStateVersion`):
    /// each push carries the newest state it decodes. Absent: the domain's current version.
    /// Read as any number, so that `2.5` gets the field's own error: `JSONDecoder` reports a
    /// fraction where an `Int` is due as a body that is not JSON at all.
    var contentStateVersion: Double?
}
