import Foundation

// Tests: Tests/LivelineStoreTests/AuditConformanceTests.swift

/// One on-call action, as `liveline audit` lists it: who ran which command, with which
/// choices, and what it did.
public struct AuditEntry: Sendable, Hashable, Codable {
    /// How the actor was named.
    public enum ActorSource: String, Sendable, Hashable, Codable {
        /// Given with `--as`.
        case given = "as"
        /// The operating-system user who ran the command.
        case osUser = "os-user"
    }

    public var at: Date
    public var actor: String
    public var actorSource: ActorSource
    /// `dlq replay`, `dlq purge`, `publish`, `user forget`.
    public var command: String
    /// The command's choices as given: filters, limits, flags.
    public var parameters: [String: String]
    /// What it did, in words: counts by reason, ids.
    public var outcome: String

    public init(
        at: Date, actor: String, actorSource: ActorSource, command: String, parameters: [String: String], outcome: String
    ) {
        self.at = at
        self.actor = actor
        self.actorSource = actorSource
        self.command = command
        self.parameters = parameters
        self.outcome = outcome
    }
}

extension AuditEntry {
    /// The parameters as a JSON object with sorted keys: one text column, read back whole.
    static func encodedParameters(_ parameters: [String: String]) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(parameters), as: UTF8.self)
    }

    static func decodedParameters(_ text: String) -> [String: String] {
        (try? JSONDecoder().decode([String: String].self, from: Data(text.utf8))) ?? [:]
    }
}
