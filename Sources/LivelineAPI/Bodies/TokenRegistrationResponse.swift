import Foundation

/// The answer to a token registration. The token itself is not echoed.
struct TokenRegistrationResponse: Encodable {
    var activityId: String?
    var deviceId: String?
    var attributesType: String?
    var registeredAt: Date
}
