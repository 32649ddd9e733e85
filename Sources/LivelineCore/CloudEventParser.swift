import Foundation
import LivelineCodecs

// Tests: Tests/LivelineCoreTests/EnvelopeParsingTests.swift

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
        let envelope: Envelope
        do {
            envelope = try JSONReader.read(body) { reader in try Envelope(reading: &reader) }
        } catch {
            throw .notJSON(Self.describe(error))
        }
        if let other = envelope.notAnObject {
            throw .notCloudEvent("top level is \(other.typeName), not an object")
        }
        guard let versionValue = envelope.specversion else {
            throw .notCloudEvent("no specversion")
        }
        guard case .string(let version) = versionValue else {
            throw .mistypedField("specversion", expected: "a string", found: versionValue.typeName)
        }
        guard version == "1.0" else { throw .unsupportedSpecVersion(version) }

        let id = try Self.requiredString("id", envelope.id)
        let source = try Self.requiredString("source", envelope.source)
        let type = try Self.requiredString("type", envelope.type)
        let subject = try Self.optionalString("subject", envelope.subject)
        let timeText = try Self.requiredString("time", envelope.time)
        guard let time = RFC3339.parse(timeText) else {
            throw .invalidField("time", reason: "\"\(timeText)\" is not an RFC 3339 timestamp")
        }
        let contentType = try Self.optionalString("datacontenttype", envelope.datacontenttype)
        if let contentType, !Self.isJSONMediaType(contentType) {
            throw .invalidField("datacontenttype", reason: "\"\(contentType)\" is not JSON")
        }
        guard let data = envelope.data else {
            if envelope.hasBase64Data {
                throw .invalidField("data_base64", reason: "binary data is not supported; send JSON in data")
            }
            throw .missingField("data")
        }
        guard case .object = data else {
            throw .mistypedField("data", expected: "an object", found: data.typeName)
        }
        let bundleID = try Self.optionalString("bundleid", envelope.bundleid)
        if let bundleID, !AppKeys.isBundleID(bundleID) {
            throw .invalidField("bundleid", reason: "\"\(bundleID.prefix(64))\" is not a bundle id such as com.example.rides")
        }
        return CloudEvent(
            specVersion: version, id: id, source: source, type: type, subject: subject,
            time: time, dataContentType: contentType, data: data, bundleID: bundleID
        )
    }

    /// The attributes Liveline reads, taken member by member: a dictionary of the whole
    /// envelope, with a `String` per key, cost a tenth of the translator's parse. Other
    /// members (extensions) are read, so bad JSON anywhere is still found, and dropped.
    /// A repeated member counts once, the last, as in a dictionary.
    private struct Envelope {
        var specversion, id, source, type, subject, time, datacontenttype, data, bundleid: JSONValue?
        var hasBase64Data = false
        /// The whole document, when it is not an object.
        var notAnObject: JSONValue?

        init(reading reader: inout JSONReader) throws {
            guard reader.nextIsObject() else {
                notAnObject = try reader.value(depth: 0)
                return
            }
            try reader.keyedMembers(depth: 0) { key, reader in
                let value = try reader.value(depth: 1)
                switch key {
                case "specversion": specversion = value
                case "id": id = value
                case "source": source = value
                case "type": type = value
                case "subject": subject = value
                case "time": time = value
                case "datacontenttype": datacontenttype = value
                case "data": data = value
                case "bundleid": bundleid = value
                case "data_base64": hasBase64Data = true
                default: break
                }
            }
        }
    }

    static func requiredString(_ path: String, in fields: [String: JSONValue], prefix: String = "") throws(EventError) -> String {
        try requiredString(prefix + path, fields[path])
    }

    static func optionalString(_ path: String, in fields: [String: JSONValue], prefix: String = "") throws(EventError) -> String? {
        try optionalString(prefix + path, fields[path])
    }

    /// A present, non-empty string, or an error naming `path` (joined only for the error).
    private static func requiredString(_ path: @autoclosure () -> String, _ value: JSONValue?) throws(EventError) -> String {
        guard let value else { throw .missingField(path()) }
        guard case .string(let text) = value else {
            throw .mistypedField(path(), expected: "a string", found: value.typeName)
        }
        guard !text.isEmpty else { throw .invalidField(path(), reason: "must not be empty") }
        return text
    }

    /// A string, or nil when absent or `null`, or an error naming `path` (joined only for the error).
    private static func optionalString(_ path: @autoclosure () -> String, _ value: JSONValue?) throws(EventError) -> String? {
        guard let value, value != .null else { return nil }
        guard case .string(let text) = value else {
            throw .mistypedField(path(), expected: "a string", found: value.typeName)
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
        (error as? JSONSyntaxError)?.description ?? "unreadable"
    }
}
