import Foundation

// Tests: Tests/LivelineModelsTests/ModelEncodingTests.swift

extension RideAttributes {
    /// The dynamic data of a ride Live Activity: the `content-state` of every push.
    ///
    /// ETA bounds are Unix seconds (`Int`) because the reference model declares them
    /// so; they are not `Date` and therefore not 2001-reference seconds.
    public struct ContentState: Codable, Hashable, Sendable {
        /// The driver's display name.
        public var driverName: String
        /// An SF Symbol or asset name for the driver's picture.
        public var driverPhoto: String
        /// The vehicle, e.g. "White Toyota Camry".
        public var vehicleDescription: String
        /// Start of the ETA window, Unix seconds.
        public var etaStartSeconds: Int
        /// End of the ETA window, Unix seconds.
        public var etaEndSeconds: Int
        /// Where the ride is in its lifecycle.
        public var status: RideStatus
        /// Distance still to go, in miles.
        public var distanceRemaining: Double

        /// Creates a ride content state.
        public init(
            driverName: String,
            driverPhoto: String,
            vehicleDescription: String,
            etaStartSeconds: Int,
            etaEndSeconds: Int,
            status: RideStatus,
            distanceRemaining: Double
        ) {
            self.driverName = driverName
            self.driverPhoto = driverPhoto
            self.vehicleDescription = vehicleDescription
            self.etaStartSeconds = etaStartSeconds
            self.etaEndSeconds = etaEndSeconds
            self.status = status
            self.distanceRemaining = distanceRemaining
        }
    }
}

extension RideAttributes.ContentState: VersionedContentState {
    public static let contentStateVersion = 2

    /// Version 1 apps know no `arriving` (they show the ride as in progress) and no distance.
    /// In this file for the synthesized `CodingKeys`: a field named here must exist.
    public static let olderContentStates = [
        ContentStateVersion(1, changes: [
            .added(RideStatus.arriving, in: CodingKeys.status, shownAs: .inProgress),
            .added(CodingKeys.distanceRemaining),
        ]),
    ]
}

extension RideAttributes.ContentState {
    /// The ETA window as dates, for `Text(timerInterval:)` in the widget.
    ///
    /// Returns an empty range at the start when the producer sent an end before the
    /// start, rather than trapping in the widget.
    public var etaRange: ClosedRange<Date> {
        let start = Date(timeIntervalSince1970: TimeInterval(etaStartSeconds))
        let end = Date(timeIntervalSince1970: TimeInterval(max(etaStartSeconds, etaEndSeconds)))
        return start...end
    }
}
