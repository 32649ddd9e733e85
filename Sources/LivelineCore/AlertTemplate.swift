// Tests: Tests/LivelineCoreTests/LocalizedAlertTests.swift

/// The text of an `aps.alert`, in one of three forms:
///
/// - **Plain text with placeholders**, filled in on the server: `"title": "Goal!"`. A new
///   wording is a configuration change and never needs an app release.
/// - **Localization keys**, which each device looks up in the app's own strings:
///   `"title": {"loc-key": "GOAL_TITLE", "loc-args": ["{scorer}"]}`. The arguments are
///   templates filled in on the server. One payload serves every language, so this is the
///   form for broadcast channels.
/// - **Per-language texts**: plain `title` and `body` plus `translations`, such as
///   `{"de": {"title": "Tor!", "body": "…"}}`, chosen per device from the locale its app
///   registered with its token (``language(forLocale:fallbackLanguage:)``). Each language is
///   its own payload, so a channel domain cannot use this form.
///
/// Placeholders: `{name}` is replaced by, in order of lookup, `message` (from
/// `data.message`), a content-state field, then an attributes field; a dotted path
/// such as `{homeTeam.abbreviation}` reads nested objects. `{name|fallback}` uses the
/// fallback text when the value is missing or empty. A placeholder without a fallback that
/// a Swift model's state and attributes cannot fill is refused when the domain is read, and
/// one a producer's override names but its event lacks is `invalid-override`; one that finds
/// no value all the same (an optional field left out) becomes empty text and a trace note.
public struct AlertTemplate: Hashable, Sendable {
    /// The alert title.
    public var title: AlertText
    /// The alert body.
    public var body: AlertText
    /// The `sound` to play, e.g. `default`; nil for a silent alert.
    public var sound: String?
    /// Plain texts by language tag (lower-case: `de`, `pt-br`); `title` and `body` are the
    /// text for every other language.
    public var translations: [String: Texts]

    /// The most `loc-args` a producer's alert may carry in its title or its body.
    public static let maximumArguments = 16
    /// The most languages a producer's alert may carry.
    public static let maximumTranslations = 64

    /// A plain title and body in one language.
    public struct Texts: Codable, Hashable, Sendable {
        public var title: String
        public var body: String

        public init(title: String, body: String) {
            self.title = title
            self.body = body
        }
    }

    /// Creates a plain-text template.
    public init(title: String, body: String, sound: String? = nil, translations: [String: Texts] = [:]) {
        self.init(title: .text(title), body: .text(body), sound: sound, translations: translations)
    }

    /// Creates a template of any form.
    public init(title: AlertText, body: AlertText, sound: String? = nil, translations: [String: Texts] = [:]) {
        self.title = title
        self.body = body
        self.sound = sound
        self.translations = Dictionary(translations.map { (AlertLanguage.normalized($0.key), $0.value) }) { $1 }
    }

    /// How the alert is given, for metrics and the trace.
    public var form: AlertForm {
        if !translations.isEmpty { return .perLanguage }
        if case .localized = title { return .localizationKey }
        if case .localized = body { return .localizationKey }
        return .text
    }

    /// Why the template cannot be sent as it is, or nil: per-language texts are plain text.
    public var problem: String? {
        guard !translations.isEmpty else { return nil }
        if case .localized = title { return "translations need a plain title, not a loc-key" }
        if case .localized = body { return "translations need a plain body, not a loc-key" }
        for language in translations.keys where !AlertLanguage.isValid(language) {
            return "translations: \(language) is not a language tag such as de or pt-BR"
        }
        return nil
    }

    /// The translation a device with `locale` gets (its key), or nil for `title` and `body`:
    /// the locale itself (`pt-br`), then its language (`pt`), then `fallbackLanguage`, the
    /// language of devices that registered no locale or one without a text.
    public func language(forLocale locale: String?, fallbackLanguage: String) -> String? {
        guard !translations.isEmpty else { return nil }
        for candidate in AlertLanguage.candidates(locale) where translations[candidate] != nil { return candidate }
        let fallback = AlertLanguage.normalized(fallbackLanguage)
        return translations[fallback] != nil ? fallback : nil
    }

    /// The title and body for a language chosen by ``language(forLocale:fallbackLanguage:)``.
    func texts(for language: String?) -> (title: AlertText, body: AlertText) {
        guard let language, let texts = translations[language] else { return (title, body) }
        return (.text(texts.title), .text(texts.body))
    }
}

/// One line of an alert, its title or its body.
public enum AlertText: Hashable, Sendable {
    /// A template, filled in on the server.
    case text(String)
    /// `{"loc-key": key, "loc-args": […]}`: the device formats the app's localized string
    /// for `key` with the arguments, each a template filled in on the server.
    case localized(key: String, arguments: [String])

    /// Every piece of text the line is made of, for bounds on length.
    var pieces: [String] {
        switch self {
        case .text(let text): [text]
        case .localized(let key, let arguments): [key] + arguments
        }
    }
}

/// How an alert's text was given.
public enum AlertForm: String, Sendable, CaseIterable {
    case text
    case localizationKey = "loc-key"
    case perLanguage = "per-language"
}

/// Language tags as apps register them with their tokens (`de`, `pt-BR`, `zh-Hans-CN`).
public enum AlertLanguage {
    /// BCP 47 in the shape apps send: a 2–3 letter language and up to three subtags of 2–8
    /// letters or digits, at most 35 characters. `_` is read as `-` (`Locale.identifier`).
    public static func isValid(_ tag: String) -> Bool {
        let parts = normalized(tag).split(separator: "-", omittingEmptySubsequences: false)
        guard tag.utf8.count <= 35, let language = parts.first, (2...3).contains(language.count),
            language.allSatisfy({ $0.isASCII && $0.isLetter }), parts.count <= 4
        else { return false }
        return parts.dropFirst().allSatisfy { (2...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }
    }

    /// Lower case, with `_` as `-`.
    public static func normalized(_ tag: String) -> String {
        String(tag.lowercased().map { $0 == "_" ? "-" : $0 })
    }

    /// The tags to look up for a locale, most specific first: `pt-br-x`, `pt-br`, `pt`.
    static func candidates(_ locale: String?) -> [String] {
        guard let locale, !locale.isEmpty else { return [] }
        var parts = normalized(locale).split(separator: "-")
        var tags: [String] = []
        while !parts.isEmpty {
            tags.append(parts.joined(separator: "-"))
            parts.removeLast()
        }
        return tags
    }
}

extension AlertTemplate: Codable {
    private enum Keys: String, CodingKey { case title, body, sound, translations }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        self.init(
            title: try container.decode(AlertText.self, forKey: .title),
            body: try container.decode(AlertText.self, forKey: .body),
            sound: try container.decodeIfPresent(String.self, forKey: .sound),
            translations: try container.decodeIfPresent([String: Texts].self, forKey: .translations) ?? [:])
        if let problem {
            throw DecodingError.dataCorruptedError(forKey: .translations, in: container, debugDescription: problem)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(title, forKey: .title)
        try container.encode(body, forKey: .body)
        try container.encodeIfPresent(sound, forKey: .sound)
        if !translations.isEmpty { try container.encode(translations, forKey: .translations) }
    }
}

extension AlertText: Codable {
    private enum Keys: String, CodingKey {
        case key = "loc-key"
        case arguments = "loc-args"
    }

    /// A string, or an object with `loc-key` and optional `loc-args`.
    public init(from decoder: any Decoder) throws {
        if let text = try? decoder.singleValueContainer().decode(String.self) {
            self = .text(text)
            return
        }
        let container = try decoder.container(keyedBy: Keys.self)
        self = .localized(
            key: try container.decode(String.self, forKey: .key),
            arguments: try container.decodeIfPresent([String].self, forKey: .arguments) ?? [])
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .text(let text):
            var container = encoder.singleValueContainer()
            try container.encode(text)
        case .localized(let key, let arguments):
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(key, forKey: .key)
            if !arguments.isEmpty { try container.encode(arguments, forKey: .arguments) }
        }
    }
}
