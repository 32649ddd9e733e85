import Foundation

/// What a domain promises about its `content-state` and attributes: how to find the
/// status, how to validate and canonicalize producer JSON, and how to encode a push
/// so the content-state goes through the domain's own `Codable`.
protocol ContentStateContract: Sendable {
    /// Statuses the model can represent, or nil when the domain configuration lists them.
    var modelStatuses: Set<String>? { get }
    /// Finds the status of an event: from the content-state for typed domains, from
    /// `data.status` for the generic domain.
    func status(contentState: [String: JSONValue], data: [String: JSONValue], domain: String) throws(EventError) -> String
    /// Validates the content-state and returns its canonical JSON.
    func canonicalContentState(_ value: JSONValue, domain: String) throws(EventError) -> JSONValue
    /// Validates attributes and returns their canonical JSON.
    func canonicalAttributes(_ value: JSONValue, domain: String) throws(EventError) -> JSONValue
    /// Encodes the whole push payload with sorted keys.
    func encodePayload(_ fields: APSFields, contentState: JSONValue, attributes: JSONValue?) throws -> Data
    /// Whether the payload's `aps.content-state` decodes back into the model.
    func contentStateRoundTrips(in payload: Data) -> Bool
}

/// The contract of a domain with Swift model types (ride, delivery, score).
struct ModelContract<Attributes: Codable & Sendable, State: Codable & Sendable>: ContentStateContract {
    /// The content-state key holding the status, e.g. `status` or `currentStep`.
    let statusKey: String
    let modelStatuses: Set<String>?

    func status(contentState: [String: JSONValue], data: [String: JSONValue], domain: String) throws(EventError) -> String {
        let path = "data.contentState.\(statusKey)"
        guard let value = contentState[statusKey] else { throw .missingField(path) }
        guard case .string(let status) = value else {
            throw .mistypedField(path, expected: "a string", found: value.typeName)
        }
        if let modelStatuses, !modelStatuses.contains(status) {
            throw .unknownStatus(domain: domain, status: status)
        }
        return status
    }

    func canonicalContentState(_ value: JSONValue, domain: String) throws(EventError) -> JSONValue {
        do {
            return try JSONValue.from(model: value.decode(as: State.self))
        } catch {
            throw .contentStateMismatch(domain: domain, detail: ModelDecoding.describe(error))
        }
    }

    func canonicalAttributes(_ value: JSONValue, domain: String) throws(EventError) -> JSONValue {
        do {
            return try JSONValue.from(model: value.decode(as: Attributes.self))
        } catch {
            throw .attributesMismatch(domain: domain, detail: ModelDecoding.describe(error))
        }
    }

    func encodePayload(_ fields: APSFields, contentState: JSONValue, attributes: JSONValue?) throws -> Data {
        // Decode into the model and let the model encode itself: the content-state
        // bytes come from the same Codable the app decodes with.
        let state = try contentState.decode(as: State.self)
        let model = try attributes.map { try $0.decode(as: Attributes.self) }
        return try CanonicalJSON.encoder().encode(LiveActivityPayload(fields: fields, contentState: state, attributes: model))
    }

    func contentStateRoundTrips(in payload: Data) -> Bool {
        (try? JSONDecoder().decode(PayloadContentState<State>.self, from: payload)) != nil
    }
}

/// The contract of a generic domain: content-state and attributes are opaque JSON
/// objects; the status comes from `data.status`.
struct OpaqueContract: ContentStateContract {
    var modelStatuses: Set<String>? { nil }

    func status(contentState: [String: JSONValue], data: [String: JSONValue], domain: String) throws(EventError) -> String {
        try CloudEventParser.requiredString("status", in: data, prefix: "data.")
    }

    func canonicalContentState(_ value: JSONValue, domain: String) throws(EventError) -> JSONValue {
        guard case .object = value else {
            throw .contentStateMismatch(domain: domain, detail: "must be a JSON object, found \(value.typeName)")
        }
        return value
    }

    func canonicalAttributes(_ value: JSONValue, domain: String) throws(EventError) -> JSONValue {
        guard case .object = value else {
            throw .attributesMismatch(domain: domain, detail: "must be a JSON object, found \(value.typeName)")
        }
        return value
    }

    func encodePayload(_ fields: APSFields, contentState: JSONValue, attributes: JSONValue?) throws -> Data {
        try CanonicalJSON.encoder().encode(LiveActivityPayload(fields: fields, contentState: contentState, attributes: attributes))
    }

    func contentStateRoundTrips(in payload: Data) -> Bool {
        guard let decoded = try? JSONDecoder().decode(PayloadContentState<JSONValue>.self, from: payload) else { return false }
        return decoded.aps.contentState.objectValue != nil
    }
}

/// Reads only `aps.content-state` back out of a payload, for the round-trip check.
private struct PayloadContentState<State: Decodable>: Decodable {
    struct APS: Decodable {
        var contentState: State
        enum CodingKeys: String, CodingKey { case contentState = "content-state" }
    }
    var aps: APS
}

/// Short, producer-readable descriptions of model decoding failures.
enum ModelDecoding {
    static func describe(_ error: any Error) -> String {
        guard let decodingError = error as? DecodingError else { return String(describing: error) }
        func path(_ context: DecodingError.Context, _ extra: (any CodingKey)? = nil) -> String {
            let keys = context.codingPath + (extra.map { [$0] } ?? [])
            let text = keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
            return text.isEmpty ? "(root)" : text
        }
        switch decodingError {
        case .keyNotFound(let key, let context): return "missing key \(path(context, key))"
        case .typeMismatch(let type, let context): return "\(path(context)) is not \(type)"
        case .valueNotFound(let type, let context): return "\(path(context)) is null, expected \(type)"
        case .dataCorrupted(let context): return "\(path(context)): \(context.debugDescription)"
        @unknown default: return String(describing: decodingError)
        }
    }
}
