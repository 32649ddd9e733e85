// Tests: Tests/LivelineCoreTests/GenericDomainTests.swift, Tests/LivelineCoreTests/LifecycleTests.swift

/// When an ended activity leaves the Lock Screen.
///
/// JSON: `"immediate"`, `"default"`, or `{"afterSeconds": 3600}`.
public enum DismissalPolicy: Hashable, Sendable {
    /// Remove at once. Sent as a `dismissal-date` in the past: the event time minus
    /// one second, so the date is deterministic and readable in traces.
    case immediate
    /// Remove this many seconds after the end; clamped to 4 hours, the most iOS keeps
    /// an ended activity.
    case after(seconds: Int64)
    /// Let iOS decide (up to 4 hours): no `dismissal-date` is sent.
    case `default`
}

extension DismissalPolicy: Codable {
    private enum Keys: String, CodingKey { case afterSeconds }

    /// Decodes `"immediate"`, `"default"` or `{"afterSeconds": n}`.
    public init(from decoder: any Decoder) throws {
        if let text = try? decoder.singleValueContainer().decode(String.self) {
            switch text {
            case "immediate": self = .immediate
            case "default": self = .default
            default:
                throw DecodingError.dataCorrupted(.init(
                    codingPath: decoder.codingPath,
                    debugDescription: "dismissal must be \"immediate\", \"default\" or {\"afterSeconds\": n}, found \"\(text)\""
                ))
            }
            return
        }
        let container = try decoder.container(keyedBy: Keys.self)
        self = .after(seconds: try container.decode(Int64.self, forKey: .afterSeconds))
    }

    /// Encodes in the same three forms.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .immediate:
            var container = encoder.singleValueContainer()
            try container.encode("immediate")
        case .default:
            var container = encoder.singleValueContainer()
            try container.encode("default")
        case .after(let seconds):
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(seconds, forKey: .afterSeconds)
        }
    }
}
