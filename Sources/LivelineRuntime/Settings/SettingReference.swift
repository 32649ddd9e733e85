import Foundation

// Tests: Tests/LivelineRuntimeTests/SettingTests.swift

/// The configuration reference, written from the declarations (``Setting/all``):
/// `liveline settings` prints it, and docs/reference/configuration.md is its Markdown form
/// (scripts/references writes it, and CI fails when the committed page differs).
public enum SettingReference {
    /// The settings read by `reader` (a role or command named in their "read by", such as
    /// `sender` or `api`), or every one.
    public static func settings(readBy reader: String? = nil) -> [Setting] {
        guard let reader else { return Setting.all }
        return Setting.all.filter { setting in
            setting.readBy.split(whereSeparator: { !$0.isLetter && $0 != "-" }).contains { $0 == reader }
        }
    }

    /// The reference page.
    public static func markdown() -> String {
        var page = """
            # Configuration reference

            Settings come from `LIVELINE_*` environment variables, then an optional JSON file (`--config`,
            keys nested under `"liveline"`), then the defaults below. A key `liveline.a.b-c` is the
            variable `LIVELINE_A_B_C`. In the JSON file, integers are JSON numbers, booleans are `true`
            or `false`, `liveline.apps` is an array of strings, and every other value is a string.
            `<name>` stands for an app's name, as `liveline.apps` lists it.

            Secrets can come from a file: add `-file` to the key (`liveline.api.jwt.hs256-secret-file`,
            `LIVELINE_API_JWT_HS256_SECRET_FILE`, or `liveline.app.<name>.key-file` for an app's key).
            The file's text is used without leading and trailing white space. When the key itself has a
            value, the file is not read. A `-file` key holds a path and is not a secret. Secrets are never
            logged, and device tokens appear in logs only as an 8-character prefix.

            `liveline settings` prints this reference (`--read-by sender` for one role's, `--json` for a
            tool), from the same declarations the code reads the settings through.

            | key | environment variable | type | default | secret | read by | meaning |
            |---|---|---|---|---|---|---|

            """
        for setting in Setting.all {
            let secret = setting.secretNote ?? (setting.isSecret ? "yes" : "no")
            let cells = [
                "`\(setting.name)`", "`\(setting.environmentVariable)`", setting.typeDescription, setting.defaultDescription,
                secret, setting.readBy, setting.meaning,
            ]
            page += "| " + cells.map { $0.replacingOccurrences(of: "|", with: "\\|") }.joined(separator: " | ") + " |\n"
        }
        page += """
            | none | `LIVELINE_LOG_FORMAT` | enum: `text`, `json` | `text` | no | every command but `topology` | \
            How logs are written; `json` writes one object per line. `--log-format` wins over it. Read from the \
            environment only, not from the `--config` file |

            The log level is a command-line option only: `--log-level` takes `trace`, `debug`, `info`,
            `notice`, `warning`, `error` or `critical` (default `info`). It has no key and no
            environment variable.

            """
        return page
    }

    /// One block per setting, for a terminal.
    public static func text(_ settings: [Setting]) -> String {
        settings.map { setting in
            """
            \(setting.name) (\(setting.environmentVariable)\(setting.isSecret ? ", secret" : ""))
            \(wrapped("\(plain(setting.typeDescription)); default \(plain(setting.defaultDescription)); read by \(plain(setting.readBy))"))
            \(wrapped(plain(setting.meaning)))

            """
        }.joined()
    }

    /// `text` in lines of at most 100 characters, each indented by two spaces.
    static func wrapped(_ text: String) -> String {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty, line.count + 1 + word.count > 98 {
                lines.append(line)
                line = ""
            }
            line += line.isEmpty ? String(word) : " " + word
        }
        lines.append(line)
        return lines.map { "  " + $0 }.joined(separator: "\n")
    }

    /// One object per setting, for a tool.
    public static func json(_ settings: [Setting]) throws -> Data {
        struct Entry: Encodable {
            let key, environmentVariable, type, `default`: String
            let secret: Bool
            let readBy, meaning: String
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(settings.map {
            Entry(
                key: $0.name, environmentVariable: $0.environmentVariable, type: plain($0.typeDescription),
                default: plain($0.defaultDescription), secret: $0.isSecret, readBy: plain($0.readBy), meaning: plain($0.meaning))
        })
    }

    /// Markdown's code spans and links as plain text.
    static func plain(_ text: String) -> String {
        var text = text.replacingOccurrences(of: "`", with: "")
        // [words](target) → words
        while let open = text.range(of: "]("), let close = text[open.upperBound...].firstIndex(of: ")"),
            let start = text[..<open.lowerBound].lastIndex(of: "[")
        {
            let words = text[text.index(after: start)..<open.lowerBound]
            text.replaceSubrange(start...close, with: words)
        }
        return text
    }
}
