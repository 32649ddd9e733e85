import Configuration
import Foundation

/// One setting, declared once (``Setting/all``): the code reads it through its declaration,
/// and the configuration reference (`liveline settings`, docs/reference/configuration.md) is
/// written from the declarations, so the key, type, default and meaning an operator reads are
/// the ones the code uses.
///
/// Keys are read under `liveline.`; as environment variables they are upper-cased with `_`
/// for `.` and `-` (``environmentVariable``).
public struct Setting: Sendable {
    /// What the setting holds: how it is read and checked, and how the reference shows it.
    public enum Form: Sendable {
        /// A whole number within the range; the unit says what it counts (`days`, `ms`).
        case integer(ClosedRange<Int>, unit: String?, default: Int?)
        /// `true` or `false` (the environment also takes `yes`/`no` and `1`/`0`).
        case flag(default: Bool)
        /// Text, of the type described.
        case text(String, default: String?)
        /// Text that is a secret: read with `isSecret`, so configuration access logs redact
        /// it, and it may come from a file named by the key with `-file` added.
        case secret(String, default: String?)
    }

    /// The key under `liveline.` (`api.port`); `<name>` stands for an app's name.
    public let key: String
    public let form: Form
    /// The roles and `liveline` commands that read it.
    public let readBy: String
    /// What it does, for an operator.
    public let meaning: String
    /// The default in words, where the value alone would not say it (a role's own, Apple's).
    public let defaultNote: String?
    /// Whether it is a secret, in words, where yes or no would not say it.
    public let secretNote: String?

    init(
        _ key: String, _ form: Form, readBy: String, defaultNote: String? = nil, secretNote: String? = nil,
        _ meaning: String
    ) {
        self.key = key
        self.form = form
        self.readBy = readBy
        self.meaning = meaning
        self.defaultNote = defaultNote
        self.secretNote = secretNote
    }

    /// The full key, `liveline.api.port`.
    public var name: String { "liveline.\(key)" }

    /// `LIVELINE_API_PORT`; `LIVELINE_APP_<NAME>_KEY` for an app's.
    public var environmentVariable: String {
        "LIVELINE_" + key.replacingOccurrences(of: ".", with: "_").replacingOccurrences(of: "-", with: "_").uppercased()
    }

    public var isSecret: Bool {
        if case .secret = form { return true }
        return false
    }

    /// The type as the reference shows it.
    public var typeDescription: String {
        switch form {
        case .integer(let range, let unit, _):
            let bounds = range.upperBound == Int.max ? "at least \(range.lowerBound)" : "\(range.lowerBound) to \(range.upperBound)"
            return "integer, \(bounds)" + (unit.map { " (\($0))" } ?? "")
        case .flag:
            return "boolean: `true` or `false` (the environment also takes `yes`/`no`, `1`/`0`)"
        case .text(let type, _), .secret(let type, _):
            return type
        }
    }

    /// The default as the reference shows it.
    public var defaultDescription: String {
        if let defaultNote { return defaultNote }
        switch form {
        case .integer(_, _, let value): return value.map { "`\($0)`" } ?? "none"
        case .flag(let value): return "`\(value)`"
        case .text(_, let value), .secret(_, let value): return value.map { "`\($0)`" } ?? "none"
        }
    }

    /// The key, with app `name` for `<name>`.
    func key(app name: String?) -> String {
        name.map { key.replacingOccurrences(of: "<name>", with: $0) } ?? key
    }

    func name(app: String?) -> String { "liveline.\(key(app: app))" }
}

// MARK: - Reading

extension Setting {
    /// The whole number set, else the default; nil only when neither is. A value that is set
    /// but is no whole number, or is out of range, is refused naming the key:
    /// swift-configuration's `int(forKey:)` answers nil for it, and the default would be
    /// used without a word.
    func integerIfSet(_ config: ConfigReader) throws -> Int? {
        guard case .integer(let range, _, let fallback) = form else { preconditionFailure("\(name) is not a number") }
        let value: Int
        if let set = config.int(forKey: ConfigKey(key)) {
            value = set
        } else if let text = config.string(forKey: ConfigKey(key)) {
            throw SettingsError("\(name) must be a whole number, not \"\(text)\"")
        } else if let fallback {
            value = fallback
        } else {
            return nil
        }
        guard range.contains(value) else {
            let bounds = range.upperBound == Int.max ? "at least \(range.lowerBound)" : "\(range.lowerBound) to \(range.upperBound)"
            // A port says so: "must be 0 to 65535" alone would not.
            throw SettingsError("\(name) must be \(range == 0...65_535 ? "a port number (\(bounds))" : bounds), not \(value)")
        }
        return value
    }

    /// The whole number set, else the default.
    func integer(_ config: ConfigReader) throws -> Int {
        guard let value = try integerIfSet(config) else { preconditionFailure("\(name) has no default") }
        return value
    }

    /// True or false, else the default; any other value is refused naming the key.
    func flag(_ config: ConfigReader) throws -> Bool {
        guard case .flag(let fallback) = form else { preconditionFailure("\(name) is not a flag") }
        if let value = config.bool(forKey: ConfigKey(key)) { return value }
        if let text = config.string(forKey: ConfigKey(key)) {
            throw SettingsError("\(name) must be true or false, not \"\(text)\"")
        }
        return fallback
    }

    /// The text set, else the default; `app` names the app of a `<name>` key.
    func text(_ config: ConfigReader, app: String? = nil) -> String? {
        guard case .text(_, let fallback) = form else { preconditionFailure("\(name) is not text") }
        return config.string(forKey: ConfigKey(key(app: app))) ?? fallback
    }

    /// The list set (comma-separated in the environment, an array in the JSON file), else empty.
    func list(_ config: ConfigReader) -> [String] {
        config.stringArray(forKey: ConfigKey(key), default: []).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
    }

    /// The secret set, else the text of the file that `<key>-file` names (without leading and
    /// trailing white space), else the default.
    func secret(_ config: ConfigReader, app: String? = nil) throws -> String? {
        guard case .secret(_, let fallback) = form else { preconditionFailure("\(name) is not a secret") }
        if let value = config.string(forKey: ConfigKey(key(app: app)), isSecret: true), !value.isEmpty { return value }
        guard let path = config.string(forKey: ConfigKey(key(app: app) + "-file")) else { return fallback }
        return try Self.read(path, for: name(app: app) + "-file").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The text of the file at `path`, which setting `name` named.
    static func read(_ path: String, for name: String) throws -> String {
        do {
            return try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw SettingsError("\(name): cannot read \(path)")
        }
    }
}
