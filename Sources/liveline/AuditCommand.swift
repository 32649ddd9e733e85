import ArgumentParser
import Crypto
import Foundation
import LivelineRuntime
import LivelineStore

// Tests: Tests/LivelineRuntimeTests/LivelineExecutableTests.swift

/// Who runs an on-call command that changes something, for its audit entry.
struct AuditOptions: ParsableArguments {
    @Option(name: .customLong("as"), help: "Who is running this, for the audit (default: the operating-system user).")
    var actor: String?

    func validate() throws {
        if let actor, actor.trimmingCharacters(in: .whitespaces).isEmpty || actor.count > 128 {
            throw ValidationError("--as takes a name of 1 to 128 characters")
        }
    }

    /// The actor and how it was named: `--as`, else the operating-system user.
    var who: (name: String, source: AuditEntry.ActorSource) {
        if let actor { return (actor, .given) }
        if let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name { return (String(cString: name), .osUser) }
        return (ProcessInfo.processInfo.environment["USER"] ?? "unknown", .osUser)
    }

    /// Records what the command did; a failure to record is an error, as an unrecorded
    /// action is what the audit exists to prevent.
    func record(
        _ command: String, parameters: [String: String?], outcome: String, in store: any ActivityStore
    ) async throws {
        let (name, source) = who
        try await store.appendAudit(AuditEntry(
            at: Date(), actor: name, actorSource: source, command: command,
            parameters: parameters.compactMapValues { $0 }, outcome: outcome))
    }
}

/// `liveline audit`: who ran which on-call command, and what it did.
struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "List the on-call actions recorded: dlq replay, dlq purge, publish and user forget.",
        discussion: "Each names who ran it (--as, or the operating-system user), when, with which choices, and what it did.")
    @OptionGroup var options: CommonOptions
    @Option(help: "Only actions at or after: an RFC 3339 time or an age such as 30m, 2h, 7d.") var since: String?
    @Option(help: "At most this many, the newest.") var limit = 100
    @Flag(help: "JSON for tools: {\"entries\": [...]}.") var json = false

    func validate() throws {
        guard limit >= 1 else { throw ValidationError("--limit must be at least 1") }
    }

    func run() async throws {
        let cutoff = try since.map { try OnCallTime.parse($0, option: "--since", now: Date()) }
        try await withOnCallStore(options) { store, _ in
            let entries = try await store.audit(since: cutoff, limit: limit)
            if json {
                let encoder = JSONEncoder.sorted
                encoder.dateEncodingStrategy = .iso8601
                print(String(decoding: try encoder.encode(["entries": entries]), as: UTF8.self))
                return
            }
            guard !entries.isEmpty else {
                print("no on-call actions recorded" + (since.map { " since \($0)" } ?? ""))
                return
            }
            for entry in entries {
                let parameters = entry.parameters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
                print([
                    ISO8601DateFormatter().string(from: entry.at), "\(entry.actor) (\(entry.actorSource.rawValue))", entry.command,
                    parameters, entry.outcome,
                ].filter { !$0.isEmpty }.joined(separator: "  "))
            }
        }
    }
}

extension AuditEntry {
    /// How an erased user is named in the audit: not by their id, which the erasure removed,
    /// but by a digest support can match against a request.
    static func erasedUser(_ userID: String) -> String {
        "sha256:" + SHA256.hash(data: Data(userID.utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
    }
}
