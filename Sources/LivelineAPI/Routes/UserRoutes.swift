import Foundation
import Hummingbird
import LivelineStore

// Tests: Tests/LivelineAPITests/UserRouteTests.swift

/// The caller's own data: `DELETE /v1/me` erases the user, as the law and App Review ask.
enum UserRoutes {
    static let routes: [APIRoute] = [
        APIRoute(method: .delete, path: "/v1/me", handler: .authenticated(deleteMe)),
    ]

    /// 200 with what was ended and removed; the same again removes nothing (all zeros).
    @Sendable static func deleteMe(_ services: APIServices, _ request: Request, context: APIRequestContext, user: AuthenticatedUser) async throws -> Response {
        guard let forget = services.forgetUser else {
            throw APIError(.serviceUnavailable, code: "unavailable", message: "erasure is not configured on this api")
        }
        let (ended, erased) = try await forget(user.key)
        context.logger.notice("user erased", metadata: APILogKey.metadata([.outcome: "ended \(ended), removed \(erased.total)"]))
        return try JSONResponse.make(ErasureResponse(ended: ended, removed: erased))
    }
}

/// `DELETE /v1/me`'s answer.
struct ErasureResponse: Encodable {
    /// Live activities ended on the user's devices first.
    let ended: Int
    let removed: UserErasure
}
