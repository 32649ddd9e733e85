import Foundation

// Tests: Tests/LivelineCodecsTests/JSONWriterTests.swift, Tests/LivelineCoreTests/JSONValueDecoderTests.swift

/// The static data of a food-delivery Live Activity.
///
/// Shape as in the reference `DeliveryAttributes`. Adopt it in the iOS app with:
///
/// ```swift
/// import ActivityKit
/// import LivelineModels
///
/// extension DeliveryAttributes: ActivityAttributes {}
/// ```
public struct DeliveryAttributes: Codable, Hashable, Sendable {
    /// The order number shown to the customer.
    public var orderNumber: Int
    /// The restaurant preparing the order.
    public var restaurantName: String

    /// Creates delivery attributes.
    public init(orderNumber: Int, restaurantName: String) {
        self.orderNumber = orderNumber
        self.restaurantName = restaurantName
    }
}
