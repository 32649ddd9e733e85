// Tests: Tests/LivelineStoreTests/AppKeyMigrationTests.swift

/// Which app each row of a store from before apps were kept apart belongs to, for the
/// migration that rewrites its ids as app keys (`app/id`, ``AppKeyMigration``). A deployment
/// gives it from its domains; a store that never held such rows needs none.
public struct AppLayout: Sendable, Hashable {
    /// The app of a row that names no domain (a user's preferences and follows), or a domain
    /// not in ``appOfDomain``.
    public var defaultApp: String
    /// Each domain's app (its `bundleId`).
    public var appOfDomain: [String: String]
    /// Each attributes type's app, for push-to-start tokens, which name a type and no domain.
    public var appOfAttributesType: [String: String]

    public init(defaultApp: String, appOfDomain: [String: String] = [:], appOfAttributesType: [String: String] = [:]) {
        self.defaultApp = defaultApp
        self.appOfDomain = appOfDomain
        self.appOfAttributesType = appOfAttributesType
    }

    /// The standard domains' app when no setting names one (`liveline.translator.bundle-id`).
    public static let standard = AppLayout(defaultApp: "com.example.liveline")
}
