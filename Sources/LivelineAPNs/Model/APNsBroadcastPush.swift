import Foundation

// Tests: none needed (declarations only)

/// One broadcast push to every device subscribed to a channel (iOS 18):
/// `POST /4/broadcasts/apps/<bundle id>` with `apns-channel-id`.
public struct APNsBroadcastPush: Sendable {
    /// The channel id returned by ``APNsClient/createChannel(storagePolicy:)``.
    public var channelID: String
    /// The JSON payload bytes.
    public var payload: [UInt8]
    /// `apns-priority`.
    public var priority: APNsPriority
    /// `apns-expiration`; for channels with no message storage it must be `.immediately` or absent.
    public var expiration: APNsExpiration?
    /// `apns-request-id`, echoed by APNs.
    public var requestID: UUID

    public init(
        channelID: String,
        payload: [UInt8],
        priority: APNsPriority,
        expiration: APNsExpiration? = nil,
        requestID: UUID = UUID()
    ) {
        self.channelID = channelID
        self.payload = payload
        self.priority = priority
        self.expiration = expiration
        self.requestID = requestID
    }
}
