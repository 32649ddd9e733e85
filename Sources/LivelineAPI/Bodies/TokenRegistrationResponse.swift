import Foundation
import LivelineModels

// Tests: Tests/LivelineAPITests/TokenRouteTests.swift

/// The answer to a token registration. The token itself is not echoed.
struct TokenRegistrationResponse: Encodable {
    var activityId: String?
    var deviceId: String?
    var attributesType: String?
    /// Where the sender sends this token.
    var environment: APNsEnvironment
    var osVersion: String?
    /// The locale as stored (`de-AT`).
    var locale: String?
    var contentStateVersion: Int?
    var registeredAt: Date
}
