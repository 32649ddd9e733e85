import Hummingbird

// Tests: none needed (declarations only)

/// The request context of the api: Hummingbird's core storage, whose logger carries the
/// request id (`hb.request.id`).
public struct APIRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }
}
