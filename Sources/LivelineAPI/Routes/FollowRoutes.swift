import Foundation
import Hummingbird
import LivelineCore
import LivelineStore

// Tests: Tests/LivelineAPITests/FollowRouteTests.swift

/// The topics a user follows: a game that names one of them in its start event starts on
/// every device of the user that has a push-to-start token.
enum FollowRoutes {
    static let routes: [APIRoute] = [
        APIRoute(method: .get, path: "/v1/follows", handler: .authenticated(getFollows)),
        APIRoute(method: .put, path: "/v1/follows/{topic}", handler: .authenticated(putFollow)),
        APIRoute(method: .delete, path: "/v1/follows/{topic}", handler: .authenticated(deleteFollow)),
    ]

    @Sendable static func getFollows(_ services: APIServices, _ request: Request, context: APIRequestContext, user: AuthenticatedUser) async throws -> Response {
        let follows = try await services.store.follows(userID: user.key)
        return try JSONResponse.make(FollowsResponse(follows: follows.map {
            FollowResponse(topic: AppKeys.id(of: $0.topic), followedAt: $0.followedAt)
        }))
    }

    /// 201 when the user starts following, 200 when they already did (idempotent).
    @Sendable static func putFollow(_ services: APIServices, _ request: Request, context: APIRequestContext, user: AuthenticatedUser) async throws -> Response {
        let topic = try Validation.topic(try context.parameter("topic", where: Validation.isIdentifier), kinds: services.topicKinds)
        let stored = user.key(topic)
        // Checked before the write, as for devices: a refused follow leaves nothing stored.
        let follows = try await services.store.follows(userID: user.key)
        if let existing = follows.first(where: { $0.topic == stored }) {
            return try JSONResponse.make(FollowResponse(topic: topic, followedAt: existing.followedAt), status: .ok)
        }
        let limit = services.limits.followsPerUser
        guard follows.count < limit else {
            throw APIError.overLimit(
                code: "too-many-follows",
                "a user may follow \(limit) topic(s) at most (liveline.api.limits.follows-per-user); unfollow one first",
                limit: "follows")
        }
        let now = Date().roundedToMilliseconds
        let created = try await services.store.follow(userID: user.key, topic: stored, at: now)
        let followedAt = created ? now : try await services.store.follows(userID: user.key).first { $0.topic == stored }?.followedAt ?? now
        return try JSONResponse.make(FollowResponse(topic: topic, followedAt: followedAt), status: created ? .created : .ok)
    }

    @Sendable static func deleteFollow(_ services: APIServices, _ request: Request, context: APIRequestContext, user: AuthenticatedUser) async throws -> Response {
        let topic = try Validation.topic(try context.parameter("topic", where: Validation.isIdentifier), kinds: services.topicKinds)
        guard try await services.store.unfollow(userID: user.key, topic: user.key(topic)) else {
            throw APIError.notFound("you do not follow this topic")
        }
        return Response(status: .noContent)
    }
}
