import Foundation
import LivelineCodecs

// Tests: Tests/LivelineCoreTests/EnvelopeParsingTests.swift, Tests/LivelineCoreTests/OverrideTests.swift

extension Translator {
    /// Reads an event off the wire and checks its `data` against the domain.
    ///
    /// The app is the envelope's `bundleid`, else the domain's; one the domain does not serve
    /// is ``EventError/unknownApp(_:domain:)``.
    ///
    /// `data` shape (all domains): `activityId` and `userId` (non-empty strings; a shared
    /// domain's events need no `userId`), `contentState` (object, the full current state),
    /// optional `attributes` (object; needed for push-to-start), optional `topics` (a
    /// non-empty array of `<kind>:<id>` strings: a shared activity's start), optional
    /// `message` (string, for alerts); generic domains also need `status` (string).
    public func parse(_ body: Data) throws(EventError) -> DomainEvent {
        try domainEvent(from: parser.parse(body))
    }

    /// Checks an already-parsed envelope against its domain.
    public func domainEvent(from envelope: CloudEvent) throws(EventError) -> DomainEvent {
        // The first dot splits it; `split` cost more than the rest of these checks.
        let type = envelope.type
        guard let dot = type.utf8.firstIndex(of: UInt8(ascii: ".")), dot != type.startIndex,
            type.index(after: dot) != type.endIndex
        else {
            throw .invalidField("type", reason: "\"\(type)\" is not <domain>.<name>")
        }
        let domainName = String(type[..<dot])
        guard let domain = domains[domainName] else { throw .unknownDomain(domainName) }
        guard case .object(let data) = envelope.data else {
            throw .mistypedField("data", expected: "an object", found: envelope.data.typeName)
        }

        // Everything after this names the activity, its user and topics within the app.
        let app = envelope.bundleID ?? domain.configuration.bundleId
        guard domain.configuration.serves(app) else { throw .unknownApp(app, domain: domainName) }
        let keys = configuration.keys
        let activityId = keys.key(app: app, id: try Self.id("activityId", in: data, app: app, keys: keys))
        let userId = domain.configuration.shared
            ? try CloudEventParser.optionalString("userId", in: data, prefix: "data.").map { keys.key(app: app, id: $0) } ?? ""
            : keys.key(app: app, id: try Self.id("userId", in: data, app: app, keys: keys))
        let topics = try Self.topics(in: data)?.map { keys.key(app: app, id: $0) }
        let overrides = try Self.overrides(in: data)
        guard let rawState = data["contentState"] else { throw .missingField("data.contentState") }
        guard case .object(let stateFields) = rawState else {
            throw .mistypedField("data.contentState", expected: "an object", found: rawState.typeName)
        }
        let message = try CloudEventParser.optionalString("message", in: data, prefix: "data.")

        let contract = domain.contract
        let status = try contract.status(contentState: stateFields, data: data, domain: domainName)
        // Generic domains declare their statuses in configuration; typed domains
        // were checked against the model's enum by the contract.
        if contract.modelStatuses == nil, domain.configuration.policy.statuses[status] == nil {
            throw .unknownStatus(domain: domainName, status: status)
        }
        let contentState = try contract.canonicalContentState(rawState, domain: domainName)
        var attributes: JSONValue?
        if let rawAttributes = data["attributes"], rawAttributes != .null {
            attributes = try contract.canonicalAttributes(rawAttributes, domain: domainName)
        }
        return DomainEvent(
            envelope: envelope, domain: domainName, name: String(type[type.index(after: dot)...]), app: app, activityId: activityId,
            userId: userId, status: status, contentState: contentState.value, attributes: attributes, message: message,
            contentStateJSON: contentState.bytes, topics: topics, overrides: overrides
        )
    }

    /// A required id of `data`. The default app's ids are their own keys, so one that begins
    /// with a bundle id and a slash, as another app's keys do, is refused.
    static func id(_ field: String, in data: [String: JSONValue], app: String, keys: AppKeys) throws(EventError) -> String {
        let id = try CloudEventParser.requiredString(field, in: data, prefix: "data.")
        if app == keys.defaultApp, let prefix = AppKeys.prefix(of: id) {
            throw .invalidField("data.\(field)", reason: "begins with \(prefix)/, the form of another app's ids; name the app with bundleid")
        }
        return id
    }

    /// `data.overrides`: its shape only; the bounds are the domain's, checked in translation.
    static func overrides(in data: [String: JSONValue]) throws(EventError) -> EventOverrides? {
        guard let value = data["overrides"], value != .null else { return nil }
        guard case .object(let fields) = value else {
            throw .mistypedField("data.overrides", expected: "an object", found: value.typeName)
        }
        let known: Set<String> = ["priority", "staleDate", "relevanceScore", "dismissalDate", "alert"]
        if let unknown = fields.keys.sorted().first(where: { !known.contains($0) }) {
            throw .invalidField("data.overrides", reason: "unknown key \"\(unknown.prefix(64))\"; known: \(known.sorted().joined(separator: ", "))")
        }
        var overrides = EventOverrides()
        if let priority = fields["priority"], priority != .null {
            guard case .integer(let number) = priority, let value = PushPriority(rawValue: Int(clamping: number)) else {
                throw .invalidField("data.overrides.priority", reason: "must be 5 or 10")
            }
            overrides.priority = value
        }
        for (key, path) in [("staleDate", \EventOverrides.staleDate), ("dismissalDate", \EventOverrides.dismissalDate)] {
            guard let text = try CloudEventParser.optionalString(key, in: fields, prefix: "data.overrides.") else { continue }
            guard let time = RFC3339.parse(text) else {
                throw .invalidField("data.overrides.\(key)", reason: "is not an RFC 3339 time")
            }
            overrides[keyPath: path] = time
        }
        if let score = fields["relevanceScore"], score != .null {
            switch score {
            case .integer(let number): overrides.relevanceScore = Double(number)
            case .double(let number): overrides.relevanceScore = number
            default: throw .mistypedField("data.overrides.relevanceScore", expected: "a number", found: score.typeName)
            }
        }
        if let alert = fields["alert"], alert != .null {
            guard case .object(let alertFields) = alert else {
                throw .mistypedField("data.overrides.alert", expected: "an object", found: alert.typeName)
            }
            overrides.alert = try Self.alert(in: alertFields)
        }
        return overrides
    }

    /// `data.overrides.alert`: `title` and `body` as text or `{"loc-key", "loc-args"}`, an
    /// optional `sound`, and optional `translations` (language tag to plain `title` and `body`).
    /// Bounds on length and count are the domain's (``OverrideBounds``), checked when translated.
    private static func alert(in fields: [String: JSONValue]) throws(EventError) -> AlertTemplate {
        let prefix = "data.overrides.alert."
        var translations: [String: AlertTemplate.Texts] = [:]
        if let value = fields["translations"], value != .null {
            guard case .object(let languages) = value else {
                throw .mistypedField(prefix + "translations", expected: "an object of language tags", found: value.typeName)
            }
            for (language, texts) in languages {
                let path = prefix + "translations.\(language)"
                guard AlertLanguage.isValid(language) else { throw .invalidField(path, reason: "is not a language tag such as de or pt-BR") }
                guard case .object(let textFields) = texts else { throw .mistypedField(path, expected: "an object", found: texts.typeName) }
                translations[language] = AlertTemplate.Texts(
                    title: try CloudEventParser.requiredString("title", in: textFields, prefix: path + "."),
                    body: try CloudEventParser.requiredString("body", in: textFields, prefix: path + "."))
            }
        }
        return AlertTemplate(
            title: try alertText(fields["title"], path: prefix + "title"),
            body: try alertText(fields["body"], path: prefix + "body"),
            sound: try CloudEventParser.optionalString("sound", in: fields, prefix: prefix),
            translations: translations)
    }

    /// A title or body: non-empty text, or `{"loc-key": "…", "loc-args": ["…"]}`.
    private static func alertText(_ value: JSONValue?, path: String) throws(EventError) -> AlertText {
        switch value {
        case nil, .null?:
            throw .missingField(path)
        case .string(let text)?:
            guard !text.isEmpty else { throw .invalidField(path, reason: "must not be empty") }
            return .text(text)
        case .object(let fields)?:
            let key = try CloudEventParser.requiredString("loc-key", in: fields, prefix: path + ".")
            var arguments: [String] = []
            if let list = fields["loc-args"], list != .null {
                guard case .array(let items) = list else {
                    throw .mistypedField(path + ".loc-args", expected: "an array of strings", found: list.typeName)
                }
                for (index, item) in items.enumerated() {
                    guard case .string(let argument) = item else {
                        throw .mistypedField(path + ".loc-args[\(index)]", expected: "a string", found: item.typeName)
                    }
                    arguments.append(argument)
                }
            }
            return .localized(key: key, arguments: arguments)
        case let other?:
            throw .mistypedField(path, expected: "a string or a loc-key object", found: other.typeName)
        }
    }

    /// The largest number of topics one start may name.
    public static let maximumTopics = 32

    /// `data.topics`: nil when absent; otherwise 1 to ``maximumTopics`` distinct `<kind>:<id>` strings.
    static func topics(in data: [String: JSONValue]) throws(EventError) -> [String]? {
        guard let value = data["topics"], value != .null else { return nil }
        guard case .array(let items) = value else {
            throw .mistypedField("data.topics", expected: "an array of strings", found: value.typeName)
        }
        guard (1...maximumTopics).contains(items.count) else {
            throw .invalidField("data.topics", reason: "must name 1 to \(maximumTopics) topics, not \(items.count)")
        }
        var topics: [String] = []
        for item in items {
            guard case .string(let topic) = item else {
                throw .mistypedField("data.topics", expected: "an array of strings", found: "an array holding \(item.typeName)")
            }
            guard isTopic(topic) else {
                throw .invalidField("data.topics", reason: "\"\(topic.prefix(64))\" is not <kind>:<id>, e.g. team:arsenal")
            }
            if !topics.contains(topic) { topics.append(topic) }
        }
        return topics
    }

    /// `<kind>:<id>`: at most 128 of `A-Z a-z 0-9 . _ ~ : -`, with a colon that is neither first nor last.
    static func isTopic(_ text: String) -> Bool {
        guard (3...128).contains(text.utf8.count), let colon = text.firstIndex(of: ":"),
            colon != text.startIndex, text.index(after: colon) != text.endIndex
        else { return false }
        return text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: ":"), UInt8(ascii: "-"):
                true
            default: false
            }
        }
    }
}
