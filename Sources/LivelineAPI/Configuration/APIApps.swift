// Tests: Tests/LivelineAPITests/AppScopeTests.swift

/// The apps the api serves: a caller's token names its app, and a route that names a domain
/// or an attributes type is another app's when none of their domains serves the caller's.
public struct APIApps: Sendable, Hashable {
    /// The app of a token with no `app` claim.
    public let defaultApp: String
    /// Each domain's apps (``LivelineCore/DomainConfiguration/apps``).
    public let appsOfDomain: [String: Set<String>]
    /// The apps of the domains of each attributes type.
    public let appsOfAttributesType: [String: Set<String>]
    /// Every app served, which each authenticated request is checked against: gathered once.
    public let all: Set<String>

    public init(defaultApp: String, appsOfDomain: [String: Set<String>] = [:], appsOfAttributesType: [String: Set<String>] = [:]) {
        self.defaultApp = defaultApp
        self.appsOfDomain = appsOfDomain
        self.appsOfAttributesType = appsOfAttributesType
        all = appsOfDomain.values.reduce([defaultApp]) { $0.union($1) }
    }

    /// One app, whatever the domains.
    public static let standard = APIApps(defaultApp: "com.example.liveline")

    /// Whether `app` may use a route naming `domain`: a domain the api was not told of is the default app's.
    public func serves(domain: String, app: String) -> Bool { appsOfDomain[domain]?.contains(app) ?? (app == defaultApp) }

    /// Whether `app` may use a route naming `attributesType`, as for a domain.
    public func serves(attributesType: String, app: String) -> Bool {
        appsOfAttributesType[attributesType]?.contains(app) ?? (app == defaultApp)
    }
}
