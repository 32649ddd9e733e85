import LivelineCore

// Tests: Tests/LivelineAPITests/AuthenticationTests.swift, Tests/LivelineAPITests/AppScopeTests.swift

/// The user a verified bearer token names, in the app it was issued for.
public struct AuthenticatedUser: Sendable, Hashable {
    /// The token's `sub`: the user id as the app knows it.
    public let id: String
    /// The token's `app` claim (a bundle id), else the deployment's default app.
    public let app: String
    /// How the store names the app's ids.
    let keys: AppKeys

    public init(id: String, app: String, keys: AppKeys) {
        self.id = id
        self.app = app
        self.keys = keys
    }

    /// The user as the store keys them, within their app (``AppKeys``).
    public var key: String { keys.key(app: app, id: id) }

    /// An id of the user's app (an activity, a topic, a channel's key) as the store keys it.
    public func key(_ id: String) -> String { keys.key(app: app, id: id) }
}
