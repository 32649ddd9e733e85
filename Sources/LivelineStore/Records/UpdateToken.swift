import Foundation
import LivelineModels

// Tests: Tests/LivelineStoreTests/SnapshotConformanceTests.swift

/// The APNs token of one running activity on one device.
///
/// An activity can run on several devices (phone, paired watch, iPad), each with its own token;
/// `deviceID` tells them apart so a rotated token replaces only that device's previous one.
public struct UpdateToken: Sendable, Hashable, Codable {
    public var activityID: String
    public var deviceID: String
    /// Lower-case hex, as APNs takes it in the request path.
    public var token: String
    public var registeredAt: Date
    /// Which APNs host accepts the token.
    public var environment: APNsEnvironment
    /// The locale the app reported (`de-AT`), nil if it did not: picks an alert's language.
    public var locale: String?
    /// The content-state version the app declared, nil if it did not (the current one).
    public var contentVersion: Int?

    public init(
        activityID: String, deviceID: String, token: String, registeredAt: Date, environment: APNsEnvironment = .production,
        locale: String? = nil, contentVersion: Int? = nil
    ) {
        self.locale = locale
        self.contentVersion = contentVersion
        self.activityID = activityID
        self.deviceID = deviceID
        self.token = token
        self.registeredAt = registeredAt
        self.environment = environment
    }
}

extension APNsEnvironment {
    /// An `environment` column as stored; it only ever holds the api's validated words,
    /// and rows from before migration 4 were production.
    init(stored text: String) {
        self = APNsEnvironment(rawValue: text) ?? .production
    }
}
