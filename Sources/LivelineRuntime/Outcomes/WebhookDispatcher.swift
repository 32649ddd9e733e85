import AsyncHTTPClient
import CoreMetrics
import Foundation
import LivelineLogging
import LivelineStore
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Synchronization

// Tests: Tests/LivelineRuntimeTests/OutcomeWebhookTests.swift

/// Posts outcomes to the producers' webhooks: per webhook, batches of up to 100 outcomes as
/// a CloudEvents batch (`application/cloudevents-batch+json`), signed (``Webhook/signature(of:at:)``).
///
/// A batch that fails (no answer in 10 s, or anything but a 2xx) is posted again after 1 s,
/// then twice as long each time up to a minute, until ``giveUpAfter`` has passed since its
/// first attempt: then it is given up and counted. Each webhook waits only on itself: one
/// that keeps failing fills its own queue (10,000 outcomes; more are dropped and counted)
/// and never holds back another's, nor any push.
///
/// - `liveline_webhook_outcomes_total{producer, result}`: `delivered`, `given-up`, `dropped`.
/// - `liveline_webhook_attempts_failed_total{producer}`: posts that failed and were retried or given up.
final class WebhookDispatcher: Service, Sendable {
    static let batchSize = 100
    static let queueLimit = 10_000

    private let inboxes: [(webhook: Webhook, inbox: Inbox)]
    private let client: HTTPClient
    private let giveUpAfter: Duration
    private let factory: any MetricsFactory
    private let logger: Logger

    init(webhooks: [Webhook], giveUpAfter: Duration, factory: any MetricsFactory = MetricsSystem.factory, logger: Logger) {
        inboxes = webhooks.map { ($0, Inbox()) }
        client = HTTPClient(eventLoopGroupProvider: .singleton)
        self.giveUpAfter = giveUpAfter
        self.factory = factory
        self.logger = logger
    }

    /// Queues each outcome for every webhook that wants its domain; never waits.
    func offer(_ outcomes: [RecordedOutcome]) {
        for (webhook, inbox) in inboxes {
            let wanted = outcomes.filter { webhook.producer.mayPublish($0.domain) }
            guard !wanted.isEmpty else { continue }
            let dropped = inbox.add(wanted, limit: Self.queueLimit)
            if dropped > 0 { count(webhook, "dropped", dropped) }
        }
    }

    /// Delivers until cancelled or shut down gracefully, then closes the HTTP client.
    func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            for (webhook, inbox) in inboxes {
                group.addTask { await self.deliver(to: webhook, from: inbox) }
            }
            await withTaskCancellationOrGracefulShutdownHandler {
                await group.waitForAll()
            } onCancelOrGracefulShutdown: {
                for (_, inbox) in self.inboxes { inbox.close() }
            }
        }
        try await client.shutdown()
    }

    private func deliver(to webhook: Webhook, from inbox: Inbox) async {
        while let batch = await inbox.take(max: Self.batchSize) {
            var body: [UInt8] = [UInt8(ascii: "[")]
            for (index, outcome) in batch.enumerated() {
                if index > 0 { body.append(UInt8(ascii: ",")) }
                body += Array(outcome.body.utf8)
            }
            body.append(UInt8(ascii: "]"))
            let started = ContinuousClock.now
            var delay = Duration.seconds(1)
            while true {
                let failure = await post(body, to: webhook)
                guard let failure else {
                    count(webhook, "delivered", batch.count)
                    break
                }
                Counter(label: "liveline_webhook_attempts_failed_total", dimensions: [("producer", webhook.producer.name)], factory: factory)
                    .increment()
                let waited = ContinuousClock.now - started
                guard waited + delay <= giveUpAfter, !inbox.isClosed else {
                    count(webhook, "given-up", batch.count)
                    logger.error("gave up posting outcomes to a producer's webhook", metadata: RuntimeLogKey.metadata([
                        .producer: "\(webhook.producer.name)", .outcomes: "\(batch.count)", .error: "\(failure)",
                    ]))
                    break
                }
                logger.warning("a producer's webhook failed; posting again", metadata: RuntimeLogKey.metadata([
                    .producer: "\(webhook.producer.name)", .outcomes: "\(batch.count)", .error: "\(failure)",
                ]))
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(60))
            }
        }
    }

    /// Posts once; nil when the webhook answered 2xx, else what went wrong.
    private func post(_ body: [UInt8], to webhook: Webhook) async -> String? {
        var request = HTTPClientRequest(url: webhook.url.absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/cloudevents-batch+json")
        request.headers.add(name: Webhook.signatureHeader, value: webhook.signature(of: body, at: Date()))
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await client.execute(request, timeout: .seconds(10))
            // Read (and drop) the body so the connection can be used again.
            _ = try? await response.body.collect(upTo: 64 * 1024)
            return (200..<300).contains(response.status.code) ? nil : "HTTP \(response.status.code)"
        } catch {
            return "\(error)"
        }
    }

    private func count(_ webhook: Webhook, _ result: String, _ outcomes: Int) {
        Counter(label: "liveline_webhook_outcomes_total", dimensions: [("producer", webhook.producer.name), ("result", result)], factory: factory)
            .increment(by: outcomes)
    }

    /// One webhook's queue of outcomes to post.
    final class Inbox: Sendable {
        private struct State {
            var pending: [RecordedOutcome] = []
            var waiting: CheckedContinuation<Void, Never>?
            var closed = false
        }

        private let state = Mutex(State())

        /// Adds what fits under `limit`; returns how many did not fit.
        func add(_ outcomes: [RecordedOutcome], limit: Int) -> Int {
            let (dropped, waiting) = state.withLock { state -> (Int, CheckedContinuation<Void, Never>?) in
                let room = max(0, limit - state.pending.count)
                state.pending += outcomes.prefix(room)
                defer { state.waiting = nil }
                return (outcomes.count - min(room, outcomes.count), state.waiting)
            }
            waiting?.resume()
            return dropped
        }

        /// Up to `max` outcomes, waiting for the first; nil once closed and empty.
        func take(max: Int) async -> [RecordedOutcome]? {
            while true {
                let taken = state.withLock { state -> [RecordedOutcome]? in
                    if state.pending.isEmpty { return state.closed ? nil : [] }
                    let batch = Array(state.pending.prefix(max))
                    state.pending.removeFirst(batch.count)
                    return batch
                }
                guard let taken else { return nil }
                if !taken.isEmpty { return taken }
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let ready = state.withLock { state -> Bool in
                        if !state.pending.isEmpty || state.closed { return true }
                        state.waiting = continuation
                        return false
                    }
                    if ready { continuation.resume() }
                }
            }
        }

        var isClosed: Bool { state.withLock { $0.closed } }

        func close() {
            state.withLock { state in
                state.closed = true
                defer { state.waiting = nil }
                return state.waiting
            }?.resume()
        }
    }
}
