import ArgumentParser
import Foundation
import LivelineCore
import LivelineRuntime
import LivelineStore

// Tests: Tests/LivelineRuntimeTests/LivelineExecutableTests.swift

/// `liveline registrations`: the content-state versions and locales that apps registered with
/// their tokens, per domain, so a team knows when an old app version can be dropped.
struct RegistrationsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "registrations",
        abstract: "Count the devices per domain by the content-state version and the locale their app registered.",
        discussion: """
            Devices that declared no version decode the domain's current one. A version no device \
            registers any more can be dropped from the model's declaration.
            """)
    @OptionGroup var options: CommonOptions
    @Option(help: "Only this domain.") var domain: String?
    @Flag(help: "JSON for tools: {\"domains\": [...]}.") var json = false

    struct Count: Codable, Equatable {
        /// nil: declared none.
        var value: String?
        var update = 0
        var pushToStart = 0
    }

    struct Domain: Codable, Equatable {
        var domain: String
        var attributesType: String
        var currentVersion: Int
        var declaredVersions: [Int]
        var versions: [Count]
        var locales: [Count]
    }

    func run() async throws {
        let workers = try WorkerSettings(config: try await LivelineSettings.reader(file: options.config))
        var domains = workers.translator.domains
        if let domain {
            domains = domains.filter { $0.name == domain }
            guard !domains.isEmpty else {
                throw OnCallError("no domain \(domain): the configured ones are \(workers.translator.domains.map(\.name).joined(separator: ", "))")
            }
        }
        try await withOnCallStore(options) { store, _ in
            var answer: [Domain] = []
            for configuration in domains {
                let counts = try await store.tokenRegistrations(attributesType: configuration.attributesType)
                answer.append(Domain(
                    domain: configuration.name, attributesType: configuration.attributesType,
                    currentVersion: configuration.contentStates.current,
                    declaredVersions: [configuration.contentStates.current] + configuration.contentStates.older.map(\.version),
                    versions: Self.tally(counts) { $0.contentVersion.map(String.init) },
                    locales: Self.tally(counts, by: \.locale)))
            }
            if json {
                print(String(decoding: try JSONEncoder.sorted.encode(["domains": answer]), as: UTF8.self))
            } else {
                print(Self.text(answer), terminator: "")
            }
        }
    }

    /// Devices by one property, tokens of both kinds side by side; in the store's order.
    static func tally(_ counts: [TokenRegistrations], by value: (TokenRegistrations) -> String?) -> [Count] {
        var rows: [Count] = []
        for count in counts {
            let key = value(count)
            let index = rows.firstIndex { $0.value == key } ?? {
                rows.append(Count(value: key))
                return rows.count - 1
            }()
            switch count.kind {
            case .update: rows[index].update += count.devices
            case .pushToStart: rows[index].pushToStart += count.devices
            }
        }
        return rows.sorted { ($0.value ?? "") < ($1.value ?? "") }
    }

    static func text(_ domains: [Domain]) -> String {
        var out = ""
        for domain in domains {
            let older = domain.declaredVersions.dropFirst().map(String.init).joined(separator: ", ")
            out += "\(domain.domain) (\(domain.attributesType)): content-state version \(domain.currentVersion)"
                + (older.isEmpty ? "" : "; older declared: \(older)") + "\n"
            for (title, rows, none) in [
                ("VERSION", domain.versions, "none (\(domain.currentVersion))"), ("LOCALE", domain.locales, "none (fallback)"),
            ] {
                guard !rows.isEmpty else {
                    out += "  no device registered\n"
                    break
                }
                out += "  " + title.padding(toLength: 18, withPad: " ", startingAt: 0) + "UPDATE  PUSH-TO-START\n"
                for row in rows {
                    let name = row.value ?? none
                    out += "  " + name.padding(toLength: 18, withPad: " ", startingAt: 0)
                        + String(row.update).leftPadded(6) + "  " + String(row.pushToStart).leftPadded(13) + "\n"
                }
            }
        }
        return out
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
