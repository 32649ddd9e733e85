import LivelineModels
import LivelineStore
import Prometheus

// Tests: Tests/LivelineAPITests/TokenRouteTests.swift, Tests/LivelineAPITests/ActivityRouteTests.swift

/// What handlers share: the store, the body reader, the metrics registry, and what the
/// deployment's domains say (topic kinds, shared domains).
struct APIServices: Sendable {
    let store: any ActivityStore
    let body: JSONBody
    let registry: PrometheusCollectorRegistry
    /// ``APIConfiguration/topicKinds``.
    let topicKinds: [String]
    /// ``APIConfiguration/sharedDomains``.
    let sharedDomains: Set<String>
    /// ``AuthenticationConfiguration/apps``.
    let apps: APIApps
    /// ``APIConfiguration/tokenEnvironments``.
    let tokenEnvironments: Set<APNsEnvironment>
    /// ``APIConfiguration/limits``.
    let limits: APILimits
    /// `DELETE /v1/me`'s erasure, when the api has one.
    let forgetUser: ForgetUser?
    /// `POST /v1/events`, when the api takes events over HTTPS.
    let intake: EventIntake?

    /// A token's APNs environment (`production` when absent), if the deployment pushes to it.
    func environment(_ value: String?) throws -> APNsEnvironment {
        let environment = try Validation.environment(value)
        guard tokenEnvironments.contains(environment) else {
            let served = tokenEnvironments.map(\.rawValue).sorted().joined(separator: ", ")
            throw APIError.unserved(
                "'environment' \(environment.rawValue) is not served by this deployment, which pushes to \(served) "
                    + "(liveline.api.token-environments)")
        }
        return environment
    }

    /// 403 unless a domain the caller's app has serves `domain`.
    func checkServes(domain: String, _ user: AuthenticatedUser) throws {
        guard apps.serves(domain: domain, app: user.app) else {
            throw APIError.forbidden("the \(domain) domain is not the app \(user.app)'s")
        }
    }

    /// 403 unless a domain of the caller's app has `attributesType`.
    func checkServes(attributesType: String, _ user: AuthenticatedUser) throws {
        guard apps.serves(attributesType: attributesType, app: user.app) else {
            throw APIError.forbidden("\(attributesType) is not the app \(user.app)'s")
        }
    }

    /// The activity (by its key), if it belongs to a shared domain: anyone may follow those.
    func sharedActivity(_ id: String) async throws -> ActivityRecord? {
        guard let activity = try await store.activity(id: id), sharedDomains.contains(activity.domain) else { return nil }
        return activity
    }
}
