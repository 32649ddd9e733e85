import Foundation

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

    public init(activityID: String, deviceID: String, token: String, registeredAt: Date) {
        self.activityID = activityID
        self.deviceID = deviceID
        self.token = token
        self.registeredAt = registeredAt
    }
}
