import CoreMetrics
import Foundation
import LivelineAMQP
import LivelineCore
import LivelineMessaging
import Metrics

// Tests: Tests/LivelineServicesTests/OutcomeTests.swift, Tests/LivelineRuntimeTests/OutcomeWebhookTests.swift

/// Publishes ``EventOutcome``s to the outcomes exchange, for the domains that asked
/// (`liveline.outcomes.domains`), as CloudEvents routed by `<domain>.<outcome>`.
///
/// At least once: the stage that reports an outcome settles the event's message only after
/// the broker confirmed the outcome, so a worker that dies before that reports it again
/// (with the same CloudEvents `id`, which a consumer deduplicates by). A consumer's queue that
/// is full (`x-overflow: reject-publish`) refuses the outcome: it is dropped and counted,
/// never retried, so a slow consumer never slows the pipeline.
///
/// - `liveline_outcomes_published_total{stage}`: outcomes the broker took.
/// - `liveline_outcomes_dropped_total{stage}`: outcomes a full queue refused.
public struct OutcomeReporter: Sendable {
    /// Which worker reports: the CloudEvents `source` (`liveline/<stage>`) and the metrics' label.
    public enum Stage: String, Sendable {
        case translator, sender, dlq
    }

    public let domains: OutcomeDomains
    private let exchange: String
    private let source: String
    private let published: Counter
    private let dropped: Counter

    public init(domains: OutcomeDomains, topology: LivelineTopology, stage: Stage, factory: any MetricsFactory = MetricsSystem.factory) {
        self.domains = domains
        exchange = topology.outcomesExchange
        source = "liveline/\(stage.rawValue)"
        published = Counter(label: "liveline_outcomes_published_total", dimensions: [("stage", stage.rawValue)], factory: factory)
        dropped = Counter(label: "liveline_outcomes_dropped_total", dimensions: [("stage", stage.rawValue)], factory: factory)
    }

    /// Whether `domain`'s events get outcomes: the check on the hot path, before any is built.
    public func reports(_ domain: String) -> Bool { domains.reports(domain) }

    /// The outcome as a message when `domain` reports outcomes, else nil; the outcome is
    /// built only then, so a domain without outcomes costs one look-up.
    public func message(
        for domain: String, _ outcome: @autoclosure () -> EventOutcome, key: String, at time: Date = Date()
    ) -> AMQPMessage? {
        reports(domain) ? message(outcome(), key: key, at: time) : nil
    }

    /// The outcome as a message. `key` tells this outcome from every other (a job's id, an
    /// event's id, a letter's id): with the outcome's kind it makes the CloudEvents `id`, the
    /// same each time the outcome is reported again.
    public func message(_ outcome: EventOutcome, key: String, at time: Date = Date()) -> AMQPMessage {
        let id = "\(key)/\(outcome.outcome.rawValue)"
        return AMQPMessage(
            exchange: exchange,
            routingKey: "\(outcome.domain).\(outcome.outcome.rawValue)",
            body: outcome.cloudEvent(id: id, source: source, time: time),
            properties: AMQPProperties(contentType: "application/cloudevents+json", persistent: true, messageID: id, timestamp: time)
        )
    }

    /// Publishes `messages` and waits for the broker: a refusal by a full queue is counted
    /// and dropped; any other failure (the connection lost) throws, for the caller to settle
    /// the event's message as not done.
    public func publish(_ messages: [AMQPMessage], on connection: AMQPConnection) async throws {
        guard !messages.isEmpty else { return }
        try await confirmed(messages.count, connection.submit(contentsOf: messages))
    }

    /// Waits for a receipt of `count` outcomes submitted earlier.
    public func confirmed(_ count: Int, _ receipt: PublishReceipt) async throws {
        do {
            try await receipt.confirmed()
            published.increment(by: count)
        } catch let error as AMQPPublishError {
            let refused = error.failures.count { $0.error.code == .publishNacked }
            guard refused == error.failures.count else { throw error }
            dropped.increment(by: refused)
            published.increment(by: count - refused)
        }
    }
}
