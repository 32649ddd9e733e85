import Hummingbird
import LivelineLogging
import LivelineStore
import Logging
import NIOCore
import Prometheus

/// Builds the api: routes, authentication, limits, error shape, metrics.
///
/// The returned application is a `Service`; run it in a `ServiceGroup` (or `runService()`).
/// Tests pass port 0 and read the bound port through `onServerRunning`.
///
/// - Parameters:
///   - configuration: address, limits and the JWT verification key.
///   - store: where tokens and activities live.
///   - registry: where `/metrics` reads from; pass the process's registry to export more.
///   - logger: the base logger; each request's logger adds `hb.request.id`.
///   - onServerRunning: called once the server listens, with its channel.
///   - forgetUser: erases a user for `DELETE /v1/me` (ends their live activities, then
///     removes everything that names them); nil answers 503.
public func buildApplication(
    configuration: APIConfiguration,
    store: some ActivityStore,
    registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
    logger: Logger = Logger(label: "liveline.api"),
    onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in },
    forgetUser: ForgetUser? = nil
) async throws -> some ApplicationProtocol {
    let router = try await buildRouter(configuration: configuration, store: store, registry: registry, forgetUser: forgetUser)
    return Application(
        router: router,
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "liveline-api"),
        onServerRunning: onServerRunning,
        logger: logger)
}

/// The routes the api serves, as method and templated path.
public func apiRouteDescriptions() -> [APIRouteDescription] {
    APIRouteTable.routes.map(\.description)
}

/// Erases one user: how many live activities it ended on their devices, and what it removed.
public typealias ForgetUser = @Sendable (_ userID: String) async throws -> (ended: Int, erased: UserErasure)

func buildRouter(
    configuration: APIConfiguration, store: some ActivityStore, registry: PrometheusCollectorRegistry,
    forgetUser: ForgetUser? = nil
) async throws -> Router<APIRequestContext> {
    let authenticator = try await BearerAuthenticator(configuration: configuration.authentication)
    let services = APIServices(
        store: store, body: JSONBody(maximumSize: configuration.maximumBodySize), registry: registry,
        topicKinds: configuration.topicKinds, sharedDomains: configuration.sharedDomains,
        tokenEnvironments: configuration.tokenEnvironments, forgetUser: forgetUser)
    let router = Router(context: APIRequestContext.self)
    // Metrics outermost so they see the status the error middleware settled on.
    router.add(middleware: RequestMetricsMiddleware(registry: registry))
    router.add(middleware: ErrorMiddleware(maximumBodySize: configuration.maximumBodySize))
    for route in APIRouteTable.routes {
        switch route.handler {
        case .open(let handler):
            router.on(RouterPath(route.path), method: route.method) { request, context in
                try await handler(services, request, context)
            }
        case .authenticated(let handler):
            router.on(RouterPath(route.path), method: route.method) { request, context in
                let user = try await authenticator.authenticate(request)
                var context = context
                context.logger[APILogKey.userID] = "\(user.id)"
                return try await handler(services, request, context, user)
            }
        }
    }
    return router
}

/// Every route, in one list.
enum APIRouteTable {
    static let routes: [APIRoute] =
        TokenRoutes.routes + ActivityRoutes.routes + FollowRoutes.routes + UserRoutes.routes + OperationalRoutes.routes
}
