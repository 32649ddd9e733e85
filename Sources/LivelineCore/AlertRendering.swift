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
        let path = name.split(separator: ".").map(String.init)
        for root in [contentState, attributes] {
            var current: JSONValue? = root
            for key in path { current = current?[key] }
            if let current, current != .null { return current.displayText }
        }
        return nil
    }
}
