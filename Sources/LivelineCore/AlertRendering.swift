import LivelineCodecs

/// Fills in ``AlertTemplate`` placeholders from an event.
struct AlertRendering {
    var message: String?
    var contentState: JSONValue
    var attributes: JSONValue?

    /// Renders a template; `unresolved` collects placeholders with no value.
    func render(_ template: AlertTemplate, unresolved: inout [String]) -> RenderedAlert {
        RenderedAlert(
            title: fill(template.title, unresolved: &unresolved),
            body: fill(template.body, unresolved: &unresolved),
            sound: template.sound
        )
    }

    private func fill(_ text: String, unresolved: inout [String]) -> String {
        var output = ""
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{") {
            output += rest[..<open]
            let afterOpen = rest.index(after: open)
            guard let close = rest[afterOpen...].firstIndex(of: "}") else {
                // An unmatched brace is literal text, not an error.
                output += rest[open...]
                return output
            }
            let token = rest[afterOpen..<close]
            let parts = token.split(separator: "|", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts.first ?? "")
            let fallback = parts.count > 1 ? String(parts[1]) : nil
            if let value = lookup(name), !value.isEmpty {
                output += value
            } else if let fallback {
                output += fallback
            } else {
                unresolved.append(name)
            }
            rest = rest[rest.index(after: close)...]
        }
        output += rest
        return output
    }

    private func lookup(_ name: String) -> String? {
        if name == "message" { return message }
        let found = Self.resolve(name, in: contentState) ?? attributes.flatMap { Self.resolve(name, in: $0) }
        return found?.displayText
    }

    /// The value at a dotted path, nil when absent or `null`. Most placeholders name a
    /// top-level member, which is looked up without splitting the path.
    private static func resolve(_ path: String, in root: JSONValue) -> JSONValue? {
        var current: JSONValue?
        if path.utf8.contains(UInt8(ascii: ".")) {
            current = root
            for key in path.split(separator: ".") { current = current?[String(key)] }
        } else {
            current = root[path]
        }
        guard let current, current != .null else { return nil }
        return current
    }
}
