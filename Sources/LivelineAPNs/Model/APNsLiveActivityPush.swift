import Foundation

// Tests: none needed (declarations only)

/// One ActivityKit push to one device: `POST /3/device/<token>` with `apns-push-type: liveactivity`.
///
/// The payload is sent exactly as given: building and validating it (≤ 4096 bytes, content-state shape)
/// is the translator's job, not the transport's.
public struct APNsLiveActivityPush: Sendable {
    /// The activity's push token (or a push-to-start token), as hex.
    public var deviceToken: String
    /// The JSON payload bytes.
    public var payload: [UInt8]
    /// `apns-priority`.
    public var priority: APNsPriority
    /// `apns-expiration`; `nil` leaves the header out (APNs then stores the push as it sees fit).
    public var expiration: APNsExpiration?
    /// `apns-id`: derive it from the job id so a retried push keeps its id in APNs' logs.
    public var apnsID: UUID
    /// `apns-collapse-id`, rarely useful for Live Activities (they already coalesce by activity).
    public var collapseID: String?

    public init(
        deviceToken: String,
        payload: [UInt8],
        priority: APNsPriority,
        expiration: APNsExpiration? = nil,
        apnsID: UUID = UUID(),
        collapseID: String? = nil
    ) {
        self.deviceToken = deviceToken
        self.payload = payload
        self.priority = priority
        self.expiration = expiration
        self.apnsID = apnsID
        self.collapseID = collapseID
    }
}
