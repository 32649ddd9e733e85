import Foundation

// Tests: Tests/LivelineAPITests/ActivityRouteTests.swift

/// `GET /v1/channels/{domain}/{key}`: the channel an app subscribes its activity to.
struct ChannelResponse: Encodable {
    var domain: String
    var key: String
    var channelId: String
    var createdAt: Date
}
