import Foundation

// Tests: Tests/LivelineAPITests/FollowRouteTests.swift

/// One topic the caller follows.
struct FollowResponse: Encodable {
    var topic: String
    var followedAt: Date
}

/// `GET /v1/follows`.
struct FollowsResponse: Encodable {
    var follows: [FollowResponse]
}
