import Foundation
import LivelineAMQP
import LivelineCore
import LivelineMessaging

// Tests: Tests/LivelineServicesTests/SenderRetryTests.swift, Tests/LivelineServicesTests/SenderDeliveryTests.swift

/// Publishes the two outcomes that leave a job on the broker: a retry (the job's body,
/// to a TTL tier) and a dead letter (a ``DeadLetter`` document, to the dead exchange).
/// Both wait for the broker's confirm, so the caller acks the original only once the
/// job exists somewhere else.
struct OutcomePublisher: Sendable {
    let connection: AMQPConnection
    let topology: LivelineTopology

    /// Sends `body` to `tier`; it comes back after the tier's TTL to the send shard of its
    /// `lane`, the shard the translator put it in.
    func retry(
        body: Data, messageID: String?, lane: String, tier: LivelineTopology.RetryTier, attempt: Int,
        firstAttemptAt: EventTime
    ) async throws {
        let headers: AMQPTable = [
            SenderHeaders.attempt: .int(Int64(attempt)),
            SenderHeaders.firstAttemptAt: .int(firstAttemptAt.millisecondsSince1970),
        ]
        try await connection.publish(
            AMQPMessage(
                exchange: topology.retryExchange,
                routingKey: topology.retryRoutingKey(tier: tier, shard: topology.sendShard(lane: lane)),
                body: body,
                properties: AMQPProperties(
                    contentType: "application/json", headers: headers, persistent: true, messageID: messageID
                )
            )
        )
    }

    /// Sends `deadLetter` to the dead exchange with the headers on-call filters by, and the
    /// job's `x-death` history (`deaths`) when it came back from retry tiers; returns the
    /// letter's id.
    @discardableResult
    func deadLetter(_ deadLetter: DeadLetter, deaths: AMQPFieldValue? = nil) async throws -> String {
        var headers: AMQPTable = [
            SenderHeaders.reason: .string(deadLetter.reason.rawValue), DeadLetterHeaders.source: "sender",
        ]
        if let deaths { headers[DeadLetterHeaders.deaths] = deaths }
        if let domain = deadLetter.domain { headers[SenderHeaders.domain] = .string(domain) }
        if let activity = deadLetter.activityId { headers[SenderHeaders.activity] = .string(activity) }
        let body = try JSONEncoder().encode(deadLetter)
        // A fresh id: the job id is not unique once a replayed job dies again.
        let id = UUID().uuidString.lowercased()
        try await connection.publish(
            AMQPMessage(
                exchange: topology.deadExchange,
                routingKey: "",
                body: body,
                properties: AMQPProperties(
                    contentType: "application/json",
                    headers: headers,
                    persistent: true,
                    messageID: id
                )
            )
        )
        return id
    }
}
