import Foundation
import Hummingbird
import LivelineCodecs
import LivelineCore

// Tests: Tests/LivelineRuntimeTests/EventIntakeTests.swift

/// Reads the events of a request in the CloudEvents HTTP binding's three modes: structured
/// (`application/cloudevents+json`, one event as the body), batched
/// (`application/cloudevents-batch+json`, a JSON array of them) and binary (the attributes in
/// `ce-*` headers, `data` as the body).
enum CloudEventsHTTP {
    enum Mode: String, Sendable {
        case structured, batch, binary
    }

    static let structuredType = "application/cloudevents+json"
    static let batchType = "application/cloudevents-batch+json"

    /// The mode the request is in, or 415 naming the accepted forms.
    static func mode(of request: Request) throws -> Mode {
        let mediaType = request.headers[.contentType].map(Self.mediaType) ?? ""
        switch mediaType {
        case structuredType: return .structured
        case batchType: return .batch
        default:
            guard request.headers[ceHeader("specversion")] != nil else {
                throw APIError(
                    .unsupportedMediaType, code: "unsupported-media-type",
                    message: "send one event as \(structuredType), a batch as \(batchType), "
                        + "or one event in binary mode: ce-* headers and a JSON body")
            }
            guard mediaType == "application/json" || mediaType.hasSuffix("+json") else {
                throw APIError(
                    .unsupportedMediaType, code: "unsupported-media-type",
                    message: "a binary-mode event's data must be JSON (Content-Type: application/json)")
            }
            return .binary
        }
    }

    /// One event of the request, in the order sent: read and checked, or why it is refused.
    struct Item: Sendable {
        let index: Int
        /// The event's id, when one could be read: it names the event in the answer.
        let id: String?
        let result: Result<DomainEvent, EventError>
    }

    /// The request's events, each checked against its domain as the translator checks it.
    /// Throws 400 for a batch that is not a JSON array of objects or holds more than
    /// `maximumBatch`.
    static func items(
        in body: Data, mode: Mode, headers: HTTPFields, translator: Translator, maximumBatch: Int
    ) throws -> [Item] {
        switch mode {
        case .structured:
            return [item(0, body, translator: translator)]
        case .binary:
            return [item(0, try structured(fromBinary: body, headers: headers), translator: translator)]
        case .batch:
            guard let value = try? JSONValue.parse(body) else {
                throw APIError.malformedBody("the batch is not valid JSON")
            }
            guard case .array(let elements) = value else {
                throw APIError.malformedBody("a batch is a JSON array of events, not \(value.typeName)")
            }
            guard !elements.isEmpty else { throw APIError.malformedBody("the batch is empty") }
            guard elements.count <= maximumBatch else {
                throw APIError(
                    .contentTooLarge, code: "batch-too-large",
                    message: "the batch holds \(elements.count) events; at most \(maximumBatch) "
                        + "(liveline.api.events.max-batch-events)", limit: "batch-events")
            }
            return elements.enumerated().map { index, element in
                item(index, JSONValue.encoded(element), translator: translator)
            }
        }
    }

    private static func item(_ index: Int, _ bytes: Data, translator: Translator) -> Item {
        do {
            let event = try translator.parse(bytes)
            return Item(index: index, id: event.id, result: .success(event))
        } catch {
            // The id, when the envelope got that far, names the event in the answer.
            let id = (try? JSONValue.parse(bytes))?["id"]?.stringValue
            return Item(index: index, id: id, result: .failure(error))
        }
    }

    /// The structured form of a binary-mode event, so both modes are checked by one parser.
    /// Header values are percent-decoded, as the binding asks.
    private static func structured(fromBinary body: Data, headers: HTTPFields) throws -> Data {
        var envelope: [String: JSONValue] = [:]
        for attribute in ["specversion", "id", "source", "type", "subject", "time", "bundleid"] {
            guard let value = headers[ceHeader(attribute)] else { continue }
            envelope[attribute] = .string(value.removingPercentEncoding ?? value)
        }
        envelope["datacontenttype"] = headers[.contentType].map(JSONValue.string)
        guard let data = try? JSONValue.parse(body) else {
            throw APIError.malformedBody("the body of a binary-mode event is its data, and it is not valid JSON")
        }
        envelope["data"] = data
        return JSONValue.encoded(.object(envelope))
    }

    private static func ceHeader(_ attribute: String) -> HTTPFields.Element.Name {
        HTTPFields.Element.Name("ce-" + attribute)!
    }

    private static func mediaType(_ contentType: String) -> String {
        (contentType.split(separator: ";", maxSplits: 1).first.map(String.init) ?? "")
            .trimmingCharacters(in: .whitespaces).lowercased()
    }
}

extension AcceptedEvent {
    /// The event as the translator reads it off the queue: structured mode, deterministic
    /// bytes, whichever mode it came in. Its digest tells a retry from another event.
    init(_ event: DomainEvent) {
        let envelope = event.envelope
        var fields: [String: JSONValue] = [
            "specversion": .string(envelope.specVersion), "id": .string(envelope.id), "source": .string(envelope.source),
            "type": .string(envelope.type), "time": .string(envelope.time.description), "data": envelope.data,
        ]
        if let subject = envelope.subject { fields["subject"] = .string(subject) }
        if let app = envelope.bundleID { fields["bundleid"] = .string(app) }
        if let contentType = envelope.dataContentType { fields["datacontenttype"] = .string(contentType) }
        self.init(
            id: envelope.id, type: envelope.type, activityID: AppKeys.id(of: event.activityId), time: envelope.time.date,
            body: JSONValue.encoded(.object(fields)))
    }
}
