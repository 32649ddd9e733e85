import Foundation
import LivelineCodecs

// Tests: Tests/LivelineCoreTests/PayloadValidationTests.swift, Tests/LivelineCoreTests/EnvelopeParsingTests.swift, Tests/LivelineCoreTests/GenericDomainTests.swift

/// What a domain promises about its `content-state` and attributes: how to find the
/// status, and how to validate producer JSON and make it canonical.
///
/// Canonical JSON is what goes into every payload and into the store, written by
/// ``JSONWriter`` with sorted keys; for typed domains it is exactly the model's own
/// `Codable` encoding, checked to decode back, so the app decodes every push it gets.
protocol ContentStateContract: Sendable {
    /// Statuses the model can represent, or nil when the domain configuration lists them.
    var modelStatuses: Set<String>? { get }
    /// Finds the status of an event: from the content-state for typed domains, from
    /// `data.status` for the generic domain.
    func status(contentState: [String: JSONValue], data: [String: JSONValue], domain: String) throws(EventError) -> String
    /// Validates the content-state and returns its canonical JSON.
    func canonicalContentState(_ value: JSONValue, domain: String) throws(EventError) -> CanonicalValue
    /// Validates attributes and returns their canonical JSON.
    func canonicalAttributes(_ value: JSONValue, domain: String) throws(EventError) -> JSONValue
}

/// A canonical value with its bytes, written once: the payload and the store reuse them.
struct CanonicalValue {
    var value: JSONValue
    var bytes: Data
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

    func canonicalContentState(_ value: JSONValue, domain: String) throws(EventError) -> CanonicalValue {
        do {
            let canonical = try ModelCanonicalForm.of(value, as: State.self)
            return CanonicalValue(value: canonical, bytes: JSONValue.encoded(canonical))
        } catch {
            throw .contentStateMismatch(domain: domain, detail: ModelDecoding.describe(error))
        }
    }

    func canonicalAttributes(_ value: JSONValue, domain: String) throws(EventError) -> JSONValue {
        do {
            return try ModelCanonicalForm.of(value, as: Attributes.self)
        } catch {
            throw .attributesMismatch(domain: domain, detail: ModelDecoding.describe(error))
        }
    }
}

/// A model type's canonical JSON for a value.
enum ModelCanonicalForm {
    /// Decodes `value` into the model as the default `JSONDecoder` does (as ActivityKit
    /// does; see ``JSONValueDecoder``) and encodes the model again: unknown keys go, dates
    /// and ranges take the model's form. Throws when the value does not decode, or when
    /// the model's own encoding does not decode back.
    ///
    /// A value that already is canonical (the Swift producer library sends it so) costs
    /// one decode and one encode: its first decode is the round trip.
    static func of<Model: Codable>(_ value: JSONValue, as type: Model.Type) throws -> JSONValue {
        let model = try JSONValueDecoder().decode(Model.self, from: value)
        let canonical = try JSONValueEncoder().encode(model)
        if canonical == value { return value }
        do {
            _ = try JSONValueDecoder().decode(Model.self, from: canonical)
        } catch {
            throw RoundTripFailure(underlying: ModelDecoding.describe(error))
        }
        return canonical
    }

    struct RoundTripFailure: Error, CustomStringConvertible {
        var underlying: String
        var description: String { "the model's own encoding does not decode back: \(underlying)" }
    }
}

/// The contract of a generic domain: content-state and attributes are opaque JSON
/// objects; the status comes from `data.status`.
struct OpaqueContract: ContentStateContract {
    var modelStatuses: Set<String>? { nil }

    func status(contentState: [String: JSONValue], data: [String: JSONValue], domain: String) throws(EventError) -> String {
        try CloudEventParser.requiredString("status", in: data, prefix: "data.")
    }

    func canonicalContentState(_ value: JSONValue, domain: String) throws(EventError) -> CanonicalValue {
        guard case .object = value else {
            throw .contentStateMismatch(domain: domain, detail: "must be a JSON object, found \(value.typeName)")
        }
        return CanonicalValue(value: value, bytes: JSONValue.encoded(value))
    }

    func canonicalAttributes(_ value: JSONValue, domain: String) throws(EventError) -> JSONValue {
        guard case .object = value else {
            throw .attributesMismatch(domain: domain, detail: "must be a JSON object, found \(value.typeName)")
        }
        return value
    }
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
