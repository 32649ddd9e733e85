// Tests: none needed (declarations only)

/// The text of an `aps.alert`, as plain text with placeholders.
///
/// Liveline renders alerts on the server as plain text rather than `loc-key`s, so a
/// new domain or wording is a configuration change and never needs an app release.
/// Producers that need localized text send it already localized in `data.message`
/// (or in the state) and reference it with `{message}`.
///
/// Placeholders: `{name}` is replaced by, in order of lookup, `message` (from
/// `data.message`), a content-state field, then an attributes field; a dotted path
/// such as `{homeTeam.abbreviation}` reads nested objects. `{name|fallback}` uses the
/// fallback text when the value is missing or empty. An unresolved placeholder
/// without a fallback becomes empty text (and a trace note).
public struct AlertTemplate: Codable, Hashable, Sendable {
    /// The alert title template.
    public var title: String
    /// The alert body template.
    public var body: String
    /// The `sound` to play, e.g. `default`; nil for a silent alert.
    public var sound: String?

    /// Creates a template.
    public init(title: String, body: String, sound: String? = nil) {
        self.title = title
        self.body = body
        self.sound = sound
    }
}
