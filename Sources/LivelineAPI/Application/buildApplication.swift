import Hummingbird
import LivelineLogging
import LivelineStore
import Logging
import NIOCore
import Prometheus

// Tests: Tests/LivelineAPITests/OpenAPIDocumentTests.swift, Tests/LivelineAPITests/AuthenticationTests.swift, Tests/LivelineAPITests/LimitTests.swift

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
    let metrics = RequestMetrics(registry: registry)
    let services = APIServices(
        store: store, body: JSONBody(maximumSize: configuration.maximumBodySize), registry: registry,
        topicKinds: configuration.topicKinds, sharedDomains: configuration.sharedDomains, apps: configuration.authentication.apps,
        tokenEnvironments: configuration.tokenEnvironments, limits: configuration.limits, forgetUser: forgetUser,
        intake: configuration.events.map { EventIntake($0, metrics: metrics) })
    let limiter = RequestLimiter(configuration.limits)
    let router = Router(context: APIRequestContext.self)
    // Metrics outermost so they see the status the error middleware settled on.
    router.add(middleware: RequestMetricsMiddleware(metrics: metrics))
    router.add(middleware: ErrorMiddleware(maximumBodySize: configuration.maximumBodySize, metrics: metrics))
    for route in APIRouteTable.routes {
        switch route.handler {
        case .open(let handler):
            router.on(RouterPath(route.path), method: route.method) { request, context in
                try await handler(services, request, context)
            }
        case .authenticated(let handler):
            router.on(RouterPath(route.path), method: route.method) { request, context in
                let user = try await authenticator.authenticate(request)
                try admit(user, limiter: limiter, limits: configuration.limits)
                var context = context
                context.logger[APILogKey.userID] = "\(user.key)"
                return try await handler(services, request, context, user)
            }
        case .producer(let handler):
            router.on(RouterPath(route.path), method: route.method) { request, context in
                guard let intake = services.intake else {
                    throw APIError(.serviceUnavailable, code: "unavailable", message: "this api does not take events over HTTPS")
                }
                let producer = try intake.authenticator.authenticate(request)
                var context = context
                context.logger[APILogKey.producer] = "\(producer.name)"
                return try await handler(services, request, context, producer, intake)
            }
        }
    }
    return router
}

/// Refuses a request past the caller's or the app's request limit with 429 and `Retry-After`.
/// After authentication: an anonymous flood is refused by the 401 and never fills a user's bucket.
private func admit(_ user: AuthenticatedUser, limiter: RequestLimiter, limits: APILimits) throws {
    guard let refusal = limiter.admit(userID: user.key, app: user.app) else { return }
    switch refusal.scope {
    case .user:
        throw APIError.rateLimited(
            "more than \(limits.userRequestsPerMinute) requests a minute from this user "
                + "(liveline.api.limits.user-requests-per-minute); retry after \(refusal.retryAfter) s",
            limit: "user-requests", retryAfter: refusal.retryAfter)
    case .app:
        throw APIError.rateLimited(
            "the api is taking more than \(limits.appRequestsPerSecond) requests a second for this app "
                + "(liveline.api.limits.app-requests-per-second); retry after \(refusal.retryAfter) s",
            limit: "app-requests", retryAfter: refusal.retryAfter)
    }
}

/// Every route, in one list.
enum APIRouteTable {
    static let routes: [APIRoute] =
        TokenRoutes.routes + ActivityRoutes.routes + FollowRoutes.routes + UserRoutes.routes + EventRoutes.routes
        + OperationalRoutes.routes
}
