import Foundation

// Tests: Tests/LivelineModelsTests/ModelEncodingTests.swift

/// The static data of a ride-hailing Live Activity, set once when the activity starts.
///
/// The shape is exactly the reference `RideAttributes`, so the server's JSON decodes in
/// ActivityKit with the default synthesized `Codable`. Adopt it in the iOS app with:
///
/// ```swift
/// import ActivityKit
/// import LivelineModels
///
/// extension RideAttributes: ActivityAttributes {}
/// ```
public struct RideAttributes: Codable, Hashable, Sendable {
    /// The rider's display name.
    public var riderName: String
    /// Where the rider is picked up, as shown on the Lock Screen.
    public var pickupLocation: String
    /// Where the ride ends, as shown on the Lock Screen.
    public var dropoffLocation: String

    /// Creates ride attributes.
    public init(riderName: String, pickupLocation: String, dropoffLocation: String) {
        self.riderName = riderName
        self.pickupLocation = pickupLocation
        self.dropoffLocation = dropoffLocation
    }
}
