import Foundation
import LivelineModels

// Tests: none needed (declarations only)

/// The token that lets the server start an activity of one attributes type on one of a
/// user's devices. Each device has its own, so every device of the user can be started.
///
/// It starts as many activities as the app is sent, until the app registers its
/// replacement (`pushToStartTokenUpdates` yields a new one) or APNs answers 410 for it.
/// Apple documents no single use, and two games that start at once must both reach a fan.
public struct PushToStartToken: Sendable, Hashable, Codable {
    public var userID: String
    public var attributesType: String
    /// The app's own id for the device; `default` for registrations that named none.
    public var deviceID: String
    /// Lower-case hex.
    public var token: String
    public var registeredAt: Date
    /// Which APNs host accepts the token.
    public var environment: APNsEnvironment
    /// The device's iOS version as the app reported it (`18.1`), nil if it did not: a
    /// broadcast channel only reaches iOS 18 and later.
    public var osVersion: String?
    /// The locale the app reported (`de-AT`), nil if it did not: picks an alert's language.
    public var locale: String?
    /// The content-state version the app declared, nil if it did not (the current one).
    public var contentVersion: Int?

    /// The device id of registrations that name none.
    public static let defaultDeviceID = "default"

    public init(
        userID: String, attributesType: String, deviceID: String = PushToStartToken.defaultDeviceID, token: String,
        registeredAt: Date, environment: APNsEnvironment = .production, osVersion: String? = nil, locale: String? = nil,
        contentVersion: Int? = nil
    ) {
        self.locale = locale
        self.contentVersion = contentVersion
        self.userID = userID
        self.attributesType = attributesType
        self.deviceID = deviceID
        self.token = token
        self.registeredAt = registeredAt
        self.environment = environment
        self.osVersion = osVersion
    }
}

/// A place in a start's audience, which is read in pages in the order of user and device
/// (``ActivityStore/audience(topics:attributesType:of:after:limit:)``).
public struct AudiencePosition: Sendable, Hashable {
    public var userID: String
    public var deviceID: String

    /// Just after `token`.
    public init(after token: PushToStartToken) {
        userID = token.userID
        deviceID = token.deviceID
    }
}
