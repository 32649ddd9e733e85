// Tests: none needed (declarations only)

/// The APNs environment a device token belongs to, from the app's `aps-environment`
/// entitlement: App Store and TestFlight builds get production tokens, builds run from
/// Xcode get development tokens, which only APNs' sandbox accepts. A token sent to the
/// other environment's host is answered with `BadDeviceToken`.
///
/// The raw values are the words of the api and the configuration.
public enum APNsEnvironment: String, Codable, Hashable, Sendable, CaseIterable {
    /// `api.push.apple.com`; the default.
    case production
    /// `api.sandbox.push.apple.com`, for development builds.
    case sandbox
}
