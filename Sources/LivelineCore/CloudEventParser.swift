import Foundation
import LivelineCodecs

/// Reads CloudEvents 1.0 structured-JSON bytes into a ``CloudEvent``, with an
/// ``EventError`` that names the first problem found.
public struct CloudEventParser: Sendable {
    /// The largest accepted message, in bytes. Checked before parsing so a huge
    /// message costs nothing.
    public var maxBytes: Int

    /// Creates a parser; the default limit is 64 KiB.
    public init(maxBytes: Int = 64 * 1024) {
        self.maxBytes = maxBytes
    }

    /// Parses and checks the envelope. `data` is returned as-is; the domain checks it.
    public func parse(_ body: Data) throws(EventError) -> CloudEvent {
        guard body.count <= maxBytes else { throw .tooLarge(bytes: body.count, limit: maxBytes) }
        let root: JSONValue
        do {
            root = try JSONValue.parse(body)
        } catch {
            throw .notJSON(Self.describe(error))
        }
        guard case .object(let fields) = root else {
            throw .notCloudEvent("top level is \(root.typeName), not an object")
        }
        guard let versionValue = fields["specversion"] else {
            throw .notCloudEvent("no specversion")
        }
        guard case .string(let version) = versionValue else {
            throw .mistypedField("specversion", expected: "a string", found: versionValue.typeName)
        }
        guard version == "1.0" else { throw .unsupportedSpecVersion(version) }

        let id = try Self.requiredString("id", in: fields)
        let source = try Self.requiredString("source", in: fields)
        let type = try Self.requiredString("type", in: fields)
        let subject = try Self.optionalString("subject", in: fields)
        let timeText = try Self.requiredString("time", in: fields)
        guard let time = RFC3339.parse(timeText) else {
            throw .invalidField("time", reason: "\"\(timeText)\" is not an RFC 3339 timestamp")
        }
        let contentType = try Self.optionalString("datacontenttype", in: fields)
        if let contentType, !Self.isJSONMediaType(contentType) {
            throw .invalidField("datacontenttype", reason: "\"\(contentType)\" is not JSON")
        }
        guard let data = fields["data"] else {
            if fields["data_base64"] != nil {
                throw .invalidField("data_base64", reason: "binary data is not supported; send JSON in data")
            }
            throw .missingField("data")
        }
        guard case .object = data else {
            throw .mistypedField("data", expected: "an object", found: data.typeName)
        }
        return CloudEvent(
            specVersion: version, id: id, source: source, type: type, subject: subject,
            time: time, dataContentType: contentType, data: data
        )
    }

    static func requiredString(_ path: String, in fields: [String: JSONValue], prefix: String = "") throws(EventError) -> String {
        guard let value = fields[path] else { throw .missingField(prefix + path) }
        guard case .string(let text) = value else {
            throw .mistypedField(prefix + path, expected: "a string", found: value.typeName)
        }
        guard !text.isEmpty else { throw .invalidField(prefix + path, reason: "must not be empty") }
        return text
    }

    static func optionalString(_ path: String, in fields: [String: JSONValue], prefix: String = "") throws(EventError) -> String? {
        guard let value = fields[path], value != .null else { return nil }
        guard case .string(let text) = value else {
            throw .mistypedField(prefix + path, expected: "a string", found: value.typeName)
        }
        return text
    }

    private static func isJSONMediaType(_ text: String) -> Bool {
        // The common case without Foundation's trimming, which costs more than the rest
        // of the envelope checks together.
        if text == "application/json" { return true }
        let mediaType = text.split(separator: ";", maxSplits: 1).first
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        return mediaType == "application/json" || mediaType.hasSuffix("+json")
    }

    private static func describe(_ error: any Error) -> String {
        guard let decodingError = error as? DecodingError else { return "unreadable" }
        switch decodingError {
        case .dataCorrupted(let context):
            let underlying = (context.underlyingError as? NSError)?.userInfo[NSDebugDescriptionErrorKey] as? String
            return underlying ?? context.debugDescription
        default:
            return "unreadable"
        }
    }
}
