import Foundation
import Hummingbird
import LivelineCore
import LivelineStore

// Tests: Tests/LivelineAPITests/ActivityRouteTests.swift

/// Reconciliation (of one's own activities, and of shared ones such as games), preferences
/// and channel lookup.
enum ActivityRoutes {
    static let routes: [APIRoute] = [
        APIRoute(method: .get, path: "/v1/activities/{activityId}", handler: .authenticated(getActivity)),
        APIRoute(method: .get, path: "/v1/preferences", handler: .authenticated(getPreferences)),
        APIRoute(method: .put, path: "/v1/preferences", handler: .authenticated(putPreferences)),
        APIRoute(method: .get, path: "/v1/channels/{domain}/{key}", handler: .authenticated(getChannel)),
    ]

    @Sendable static func getActivity(_ services: APIServices, _ request: Request, context: APIRequestContext, user: AuthenticatedUser) async throws -> Response {
        let activityID = try context.parameter("activityId", where: Validation.isIdentifier)
        guard let activity = try await services.store.activity(id: user.key(activityID)) else {
            throw APIError.notFound("no such activity")
        }
        // A shared activity (a game) is anyone's to reconcile; a personal one only its owner's.
        guard activity.userID == user.key || services.sharedDomains.contains(activity.domain) else {
            throw APIError.forbidden("the activity belongs to another user")
        }
        return try JSONResponse.make(data: Self.encode(activity))
    }

    /// The content-state goes out byte for byte as it was pushed, so the app decodes it with
    /// the very ContentState type (and date encoding) ActivityKit used.
    static func encode(_ activity: ActivityRecord) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = Date.millisecondsStrategy
        var data = try encoder.encode(ActivityStatusResponse(activity))
        guard data.last == UInt8(ascii: "}") else { throw APIError.internalError }
        data.removeLast()
        data.append(contentsOf: Array(#","contentState":"#.utf8))
        data.append(contentsOf: Array((activity.contentState ?? "null").utf8))
        data.append(UInt8(ascii: "}"))
        return data
    }

    @Sendable static func getPreferences(_ services: APIServices, _ request: Request, context: APIRequestContext, user: AuthenticatedUser) async throws -> Response {
        let preferences = try await services.store.preferences(userID: user.key)
        return try JSONResponse.make(PreferencesBody(
            activitiesEnabled: preferences.activitiesEnabled, frequentPushesEnabled: preferences.frequentPushesEnabled))
    }

    @Sendable static func putPreferences(_ services: APIServices, _ request: Request, context: APIRequestContext, user: AuthenticatedUser) async throws -> Response {
        let input = try await services.body.decode(PreferencesBody.self, from: request)
        try await services.store.setPreferences(
            UserPreferences(activitiesEnabled: input.activitiesEnabled, frequentPushesEnabled: input.frequentPushesEnabled),
            userID: user.key)
        return try JSONResponse.make(input)
    }

    @Sendable static func getChannel(_ services: APIServices, _ request: Request, context: APIRequestContext, user: AuthenticatedUser) async throws -> Response {
        let domain = try context.parameter("domain", where: Validation.isDomain)
        let key = try context.parameter("key", where: Validation.isIdentifier)
        try services.checkServes(domain: domain, user)
        guard let channel = try await services.store.channel(domain: domain, key: user.key(key)), channel.deletedAt == nil else {
            throw APIError.notFound("no live channel for this domain and key")
        }
        return try JSONResponse.make(ChannelResponse(
            domain: channel.domain, key: key, channelId: channel.channelID, createdAt: channel.createdAt))
    }
}
