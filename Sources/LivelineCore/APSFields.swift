import Foundation
import LivelineCodecs

// Tests: Tests/LivelineCoreTests/GoldenPayloadTests.swift, Tests/LivelineCoreTests/PayloadValidationTests.swift

/// The `aps` members of a Live Activity push other than `content-state` and
/// `attributes`, which are encoded by the domain's model types.
struct APSFields: Hashable, Sendable {
    /// `aps.timestamp`: Unix seconds; ActivityKit ignores a push that is not newer.
    var timestamp: Int64
    var event: PushEvent
    /// Unix seconds.
    var staleDate: Int64?
    var relevanceScore: Double?
    /// Unix seconds; only on `end`.
    var dismissalDate: Int64?
    var alert: RenderedAlert?
    /// Only on `start`.
    var attributesType: String?
    /// Only on `start`: asks iOS 18 to report the new activity's update token.
    var inputPushToken: Bool = false
    /// Only on a shared activity's `start`: the broadcast channel the new activity listens on.
    var inputPushChannel: String? = nil
}

/// An alert after its template was filled in.
struct RenderedAlert: Hashable, Sendable {
    var title: Text
    var body: Text
    var sound: String?

    /// A title or body as sent: text, or a key the device localizes.
    enum Text: Hashable, Sendable {
        case text(String)
        case localized(key: String, arguments: [String])

        func write(to writer: inout JSONWriter) {
            switch self {
            case .text(let text):
                writer.string(text)
            case .localized(let key, let arguments):
                writer.raw(#"{"loc-args":["#)
                for (index, argument) in arguments.enumerated() {
                    if index > 0 { writer.raw(",") }
                    writer.string(argument)
                }
                writer.raw(#"],"loc-key":"#)
                writer.string(key)
                writer.raw("}")
            }
        }
    }
}

extension APSFields {
    /// The whole push body, `{"aps":{…}}`, keys sorted as ``JSONWriter`` sorts them.
    ///
    /// `contentStateJSON` and `attributes` must already be canonical (what the domain's
    /// model encodes to: see ``ContentStateContract``); they are written as they are.
    func payload(contentStateJSON: Data, attributes: JSONValue?) -> Data {
        var writer = JSONWriter()
        writer.raw(#"{"aps":{"#)
        if let alert {
            writer.raw(#""alert":{"body":"#)
            alert.body.write(to: &writer)
            if let sound = alert.sound {
                writer.raw(#","sound":"#)
                writer.string(sound)
            }
            writer.raw(#","title":"#)
            alert.title.write(to: &writer)
            writer.raw("},")
        }
        if event == .start {
            if let attributes {
                writer.key("attributes")
                writer.value(attributes)
                writer.raw(",")
            }
            if let attributesType {
                writer.key("attributes-type")
                writer.string(attributesType)
                writer.raw(",")
            }
        }
        writer.key("content-state")
        writer.json(contentStateJSON)
        if let dismissalDate {
            writer.raw(#","dismissal-date":"#)
            writer.integer(dismissalDate)
        }
        writer.raw(#","event":"#)
        writer.string(event.rawValue)
        if let inputPushChannel {
            writer.raw(#","input-push-channel":"#)
            writer.string(inputPushChannel)
        }
        if inputPushToken { writer.raw(#","input-push-token":1"#) }
        if let relevanceScore {
            writer.raw(#","relevance-score":"#)
            writer.double(relevanceScore)
        }
        if let staleDate {
            writer.raw(#","stale-date":"#)
            writer.integer(staleDate)
        }
        writer.raw(#","timestamp":"#)
        writer.integer(timestamp)
        writer.raw("}}")
        return writer.data
    }
}
