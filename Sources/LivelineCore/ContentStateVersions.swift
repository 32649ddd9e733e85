import LivelineCodecs
import LivelineModels

// Tests: Tests/LivelineCoreTests/ContentStateVersionTests.swift

/// The content-state versions a domain's apps decode, and how the current state becomes each
/// older one (``VersionedContentState`` for the Swift models, `contentStateVersions` in a
/// generic domain's file).
///
/// JSON: `{"current": 2, "older": [{"version": 1, "changes": [...]}]}`; absent: version 1
/// and nothing older.
public struct ContentStateVersions: Hashable, Sendable, Codable {
    /// The version of the state producers send.
    public var current: Int
    /// Older versions, newest first.
    public var older: [ContentStateVersion]

    public init(current: Int = 1, older: [ContentStateVersion] = []) {
        self.current = current
        self.older = older
    }

    /// A Swift model's declaration.
    public init<State: VersionedContentState>(of state: State.Type) {
        self.init(current: State.contentStateVersion, older: State.olderContentStates)
    }

    private enum Keys: String, CodingKey { case current, older }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        self.init(
            current: try container.decodeIfPresent(Int.self, forKey: .current) ?? 1,
            older: try container.decodeIfPresent([ContentStateVersion].self, forKey: .older) ?? [])
    }

    /// What is wrong with the declaration, or nil: versions from newest to oldest, each
    /// change named once, and a case shown as one its version knows.
    ///
    /// A Swift model names its fields by its `CodingKeys`, so the compiler checks them; a
    /// generic domain has no model to check its field names against.
    ///
    /// - Parameter cases: each enum field's cases in the current model, where known.
    func problem(cases: [String: Set<String>]) -> String? {
        guard current >= 1 else { return "current must be 1 or more, not \(current)" }
        var newer = current
        // Values each field has gained since the version being checked.
        var added: [String: Set<String>] = [:]
        for older in older {
            let at = "version \(older.version)"
            guard older.version >= 1, older.version < newer else {
                return "\(at) must be 1 or more and lower than \(newer): list versions newest first"
            }
            var seen: Set<ContentStateChange> = []
            for change in older.changes {
                guard seen.insert(change).inserted else { return "\(at) names \(change.field) twice" }
                guard case .addedCase(let field, let value, let shownAs) = change else { continue }
                if let known = cases[field], !known.contains(value) {
                    return "\(at) names case '\(value)' of \(field), which the model does not have"
                }
                added[field, default: []].insert(value)
                if let shownAs, added[field]?.contains(shownAs) == true || cases[field].map({ !$0.contains(shownAs) }) == true {
                    return "\(at) shows '\(value)' as '\(shownAs)', which version \(older.version) of \(field) does not have"
                }
            }
            newer = older.version
        }
        return nil
    }

    /// `state`, the current version's, as an app built with `version` decodes it; nil for
    /// the current version (or a newer one: an app built after the server's model).
    ///
    /// - Returns: the state, or why `version` cannot show it.
    func state(_ state: JSONValue, for version: Int) -> Result<JSONValue, Incompatible>? {
        guard version < current else { return nil }
        guard case .object(var fields) = state else { return .success(state) }
        for older in older {
            for change in older.changes {
                switch change {
                case .addedCase(let field, let value, let shownAs):
                    guard fields[field] == .string(value) else { continue }
                    guard let shownAs else {
                        return .failure(Incompatible(message: "\(field) '\(value)' has no equivalent in content-state version \(older.version)"))
                    }
                    fields[field] = .string(shownAs)
                case .addedField(let field):
                    fields[field] = nil
                case .madeOptional(let field, let value):
                    if fields[field] == nil || fields[field] == .null { fields[field] = value.json }
                }
            }
            if older.version <= version { return .success(.object(fields)) }
        }
        return .failure(Incompatible(message: "content-state version \(version) is older than any declared (oldest: \(older.last?.version ?? current))"))
    }

    /// Why a state cannot be sent to a device of an older version.
    struct Incompatible: Error, Hashable {
        var message: String
    }
}

extension ContentStateDefault {
    var json: JSONValue {
        switch self {
        case .string(let value): .string(value)
        case .int(let value): .integer(Int64(value))
        case .double(let value): .double(value)
        case .bool(let value): .bool(value)
        }
    }
}
