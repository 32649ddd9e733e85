import Foundation

// Tests: Tests/LivelineCoreTests/GenericDomainTests.swift, Tests/LivelineCoreTests/RoundTripTests.swift

/// Turns domain events into ActivityKit pushes. Pure: every input is a value, every
/// output is a ``TranslationDecision``; the service does the I/O around it.
///
/// Use it in two steps, because the service needs the activity id to load the
/// snapshot:
///
/// ```swift
/// let event = try translator.parse(body)                  // or dead-letter the EventError
/// let decision = translator.translate(event: event, activity: snapshot, tokens: tokens,
///                                     preferences: preferences, budget: budget, now: now)
/// ```
///
/// `aps.timestamp` is the event time in Unix seconds, except that it is raised to one
/// more than the last timestamp sent for the activity when two events fall in the
/// same second: ActivityKit ignores a push whose timestamp is not newer, and the
/// later event (possibly the end) must not be lost.
public struct Translator: Sendable {
    /// The configuration in force.
    public let configuration: TranslatorConfiguration
    let domains: [String: ConfiguredDomain]
    let parser: CloudEventParser

    /// A domain with its contract resolved once. A class, so a lookup for every event is a
    /// reference, not a copy of the whole configuration.
    final class ConfiguredDomain: Sendable {
        let configuration: DomainConfiguration
        let contract: any ContentStateContract

        init(configuration: DomainConfiguration, contract: any ContentStateContract) {
            self.configuration = configuration
            self.contract = contract
        }
    }

    /// Creates a translator. A domain listed twice keeps its last entry, so an
    /// override file can simply append.
    public init(configuration: TranslatorConfiguration) {
        self.configuration = configuration
        var domains: [String: ConfiguredDomain] = [:]
        for domain in configuration.domains {
            domains[domain.name] = ConfiguredDomain(configuration: domain, contract: domain.kind.contract)
        }
        self.domains = domains
        self.parser = CloudEventParser(maxBytes: configuration.maxEventBytes)
    }

    /// The configuration of a domain, if configured.
    public func domain(named name: String) -> DomainConfiguration? {
        domains[name]?.configuration
    }

    /// A domain's attributes type, asked for every event: ``domain(named:)`` copies the whole
    /// configuration, which cost more than the rest of the question.
    public func attributesType(ofDomain name: String) -> String? {
        domains[name]?.configuration.attributesType
    }

    /// A domain's kind, asked for every activity a batch loads.
    public func kind(ofDomain name: String) -> DomainKind? {
        domains[name]?.configuration.kind
    }

    /// Whether a domain is configured and shared (one activity for many users), asked for
    /// every event.
    public func isShared(domain name: String) -> Bool {
        domains[name]?.configuration.shared ?? false
    }
}
