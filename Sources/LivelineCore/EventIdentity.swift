import Foundation
import LivelineCodecs

// Tests: Tests/LivelineServicesTests/TranslatorServiceTests.swift

/// What a CloudEvent's bytes still say about it when the event as a whole is refused: its
/// id, type, domain and activity, so a dead letter can be filtered and republished.
public struct EventIdentity: Sendable, Hashable {
    public var eventId: String?
    /// The CloudEvent `type`, `<domain>.<type>`: also the routing key it was published with.
    public var type: String?
    public var domain: String?
    public var activityId: String?
    /// The `bundleid` extension attribute: the app the event names, if any.
    public var bundleId: String?

    /// Reads what it can from `body`; nil when `body` is not a JSON object.
    public init?(peeking body: Data) {
        guard let root = try? JSONValue.parse(body), case .object(let fields) = root else { return nil }
        eventId = fields["id"]?.stringValue
        type = fields["type"]?.stringValue
        if let type, let domain = type.split(separator: ".").first, !domain.isEmpty { self.domain = String(domain) }
        activityId = fields["data"]?["activityId"]?.stringValue
        bundleId = fields["bundleid"]?.stringValue
    }
}
