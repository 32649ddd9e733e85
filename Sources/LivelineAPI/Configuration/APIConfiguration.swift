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

    /// The topic kinds of a deployment that configures none.
    public static let defaultTopicKinds = ["team", "league", "game"]

    public init(
        host: String = "0.0.0.0", port: Int = 8080, maximumBodySize: Int = 16 * 1024,
        authentication: AuthenticationConfiguration, topicKinds: [String] = APIConfiguration.defaultTopicKinds,
        sharedDomains: Set<String> = ["score"]
    ) {
        self.topicKinds = topicKinds
        self.sharedDomains = sharedDomains
        self.host = host
        self.port = port
        self.maximumBodySize = maximumBodySize
        self.authentication = authentication
    }
}
