import Foundation

// Tests: Tests/LivelineModelsTests/ModelEncodingTests.swift

extension DeliveryAttributes {
    /// The dynamic data of a delivery Live Activity.
    ///
    /// `estimatedDeliveryTime` is a `ClosedRange<Date>`, so with the default `Codable`
    /// it travels as a two-element array of seconds since 2001-01-01 (not Unix time),
    /// e.g. `[785000000, 785001800]`.
    public struct ContentState: Codable, Hashable, Sendable {
        /// The courier's display name.
        public var driverName: String
        /// The window in which the order should arrive.
        public var estimatedDeliveryTime: ClosedRange<Date>
        /// Where the order is.
        public var currentStep: DeliveryStep

        /// Creates a delivery content state.
        public init(driverName: String, estimatedDeliveryTime: ClosedRange<Date>, currentStep: DeliveryStep) {
            self.driverName = driverName
            self.estimatedDeliveryTime = estimatedDeliveryTime
            self.currentStep = currentStep
        }
    }
}

extension DeliveryAttributes.ContentState: VersionedContentState {
    public static let contentStateVersion = 1
    public static let olderContentStates: [ContentStateVersion] = []
}
