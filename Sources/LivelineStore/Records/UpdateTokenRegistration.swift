import Foundation
import LivelineModels

// Tests: none needed (declarations only)

/// An app's request to store the update token of one activity on one device.
public struct UpdateTokenRegistration: Sendable, Hashable {
    public var activityID: String
    public var deviceID: String
    /// The authenticated user; must own the activity.
    public var userID: String
    /// Lower-case hex.
    public var token: String
    /// Which APNs host accepts the token.
    public var environment: APNsEnvironment
    /// The locale the app reported, nil if none.
    public var locale: String?
    /// The content-state version the app declared, nil if none.
    public var contentVersion: Int?
    /// Used only when the registration creates a pending row.
    public var domain: String?
    /// Used only when the registration creates a pending row.
    public var attributesType: String?
    public var at: Date

    public init(
        activityID: String, deviceID: String, userID: String, token: String,
        environment: APNsEnvironment = .production, locale: String? = nil, contentVersion: Int? = nil,
        domain: String? = nil, attributesType: String? = nil, at: Date
    ) {
        self.locale = locale
        self.contentVersion = contentVersion
        self.activityID = activityID
        self.deviceID = deviceID
        self.userID = userID
        self.token = token
        self.environment = environment
        self.domain = domain
        self.attributesType = attributesType
        self.at = at
    }
}
