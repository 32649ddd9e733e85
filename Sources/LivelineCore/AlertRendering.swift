import LivelineCodecs

// Tests: Tests/LivelineCoreTests/PrimitivesTests.swift, Tests/LivelineCoreTests/GoldenPayloadTests.swift

/// Fills in ``AlertTemplate`` placeholders from an event.
struct AlertRendering {
    var message: String?
    var contentState: JSONValue
    var attributes: JSONValue?

    /// Renders a template in `language` (a key of its translations, nil for its own title and
    /// body); `unresolved` collects placeholders with no value.
    func render(_ template: AlertTemplate, language: String? = nil, unresolved: inout [String]) -> RenderedAlert {
        let texts = template.texts(for: language)
        return RenderedAlert(
            title: render(texts.title, unresolved: &unresolved),
            body: render(texts.body, unresolved: &unresolved),
            sound: template.sound
        )
    }

    /// The placeholders of `template`, in any of its languages, that have no value here and no
    /// fallback.
    func unresolved(in template: AlertTemplate) -> [String] {
        var names: [String] = []
        for language in [nil] + template.translations.keys.sorted() { _ = render(template, language: language, unresolved: &names) }
        return names
    }

    private func render(_ text: AlertText, unresolved: inout [String]) -> RenderedAlert.Text {
        switch text {
        case .text(let template):
            .text(fill(template, unresolved: &unresolved))
        case .localized(let key, let arguments):
            .localized(key: key, arguments: arguments.map { fill($0, unresolved: &unresolved) })
        }
    }

    /// Placeholders are found byte by byte: braces and the bar are ASCII, and searching
    /// the `Character`s for them cost more than the rest of an alert's rendering.
    private func fill(_ text: String, unresolved: inout [String]) -> String {
        let utf8 = text.utf8
        var output = ""
        var rest = utf8.startIndex
        while let open = utf8[rest...].firstIndex(of: UInt8(ascii: "{")) {
            output += Substring(utf8[rest..<open])
            let afterOpen = utf8.index(after: open)
            guard let close = utf8[afterOpen...].firstIndex(of: UInt8(ascii: "}")) else {
                // An unmatched brace is literal text, not an error.
                output += Substring(utf8[open...])
                return output
            }
            let token = utf8[afterOpen..<close]
            let bar = token.firstIndex(of: UInt8(ascii: "|"))
            let name = String(Substring(token[..<(bar ?? close)]))
            if let value = lookup(name), !value.isEmpty {
                output += value
            } else if let bar {
                output += Substring(token[utf8.index(after: bar)...])
            } else {
                unresolved.append(name)
            }
            rest = utf8.index(after: close)
        }
        output += Substring(utf8[rest...])
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
            // By byte, one segment at a time: splitting the `Character`s cost several thousand
            // instructions a path, and `split` an array of the segments. Empty segments are
            // skipped, as `split` skips them.
            let utf8 = path.utf8
            var start = utf8.startIndex
            while start < utf8.endIndex {
                let end = utf8[start...].firstIndex(of: UInt8(ascii: ".")) ?? utf8.endIndex
                if start < end { current = current?[String(Substring(utf8[start..<end]))] }
                start = end < utf8.endIndex ? utf8.index(after: end) : end
            }
        } else {
            current = root[path]
        }
        guard let current, current != .null else { return nil }
        return current
    }
}
