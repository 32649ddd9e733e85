// Tests: none needed (declarations only)

/// A successful answer from APNs.
public struct APNsResponse: Sendable, Hashable {
    /// The HTTP status (200 for pushes, 201/204 for some channel management calls).
    public let status: Int
    /// The `apns-id` (device push) or `apns-request-id` (broadcast, channel management) that APNs echoed.
    public let apnsID: String?
    /// `apns-unique-id`: APNs returns it in the sandbox so the push can be looked up in the
    /// Push Notifications Console's delivery log.
    public let uniqueID: String?

    public init(status: Int, apnsID: String?, uniqueID: String?) {
        self.status = status
        self.apnsID = apnsID
        self.uniqueID = uniqueID
    }
}
