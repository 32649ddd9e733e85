import LivelineModels

// Tests: none needed (declarations only)

/// Settings of the api service.
public struct APIConfiguration: Sendable {
    /// The address to listen on.
    public var host: String
    /// The port to listen on; 0 picks a free one (tests).
    public var port: Int
    /// The largest request body accepted, in bytes; larger ones get 413.
    public var maximumBodySize: Int
    /// How bearer tokens are verified.
    public var authentication: AuthenticationConfiguration
    /// The topic kinds users may follow (`team` in `team:arsenal`); others get 404.
    public var topicKinds: [String]

    /// The domains whose activities are shared (a game): any user may read one and subscribe
    /// a device to it; the others are their owner's alone.
    public var sharedDomains: Set<String>

    /// The APNs environments the deployment pushes to: a token registered for another is
    /// refused with 400 (a development build's sandbox token on a production-only deployment).
    public var tokenEnvironments: Set<APNsEnvironment>

    /// How often a caller may call, and how much a user may keep.
    public var limits: APILimits

    /// Events over HTTPS (`POST /v1/events`); nil answers 503 there.
    public var events: EventIntakeConfiguration?

    /// The topic kinds of a deployment that configures none.
    public static let defaultTopicKinds = ["team", "league", "game"]

    public init(
        host: String = "0.0.0.0", port: Int = 8080, maximumBodySize: Int = 16 * 1024,
        authentication: AuthenticationConfiguration, topicKinds: [String] = APIConfiguration.defaultTopicKinds,
        sharedDomains: Set<String> = ["score"], tokenEnvironments: Set<APNsEnvironment> = [.production, .sandbox],
        limits: APILimits = APILimits(), events: EventIntakeConfiguration? = nil
    ) {
        self.events = events
        self.limits = limits
        self.tokenEnvironments = tokenEnvironments
        self.topicKinds = topicKinds
        self.sharedDomains = sharedDomains
        self.host = host
        self.port = port
        self.maximumBodySize = maximumBodySize
        self.authentication = authentication
    }
}
