import Crypto
import Foundation
import LivelineAMQP
import LivelineCodecs
import LivelineCore
import LivelineMessaging
import LivelineStore

// Tests: Tests/LivelineServicesTests/ReplayDecisionTests.swift, Tests/LivelineServicesTests/DeadLetterPipelineTests.swift

/// Reads any message of `liveline.dead` into one ``DeadLetterRecord``, whoever put it there:
/// a ``DeadLetter`` document from the translator or the sender, or a raw event or job the
/// broker moved there itself with only its `x-death` history. Nothing is refused: a message
/// that fits neither is kept with what can be told about it, so no letter is ever lost.
public enum DeadLetterReading {
    /// The records for one message taken off the dead-letter queue at `now`: one, or one per
    /// job of a ``PushJobBundle`` the broker dead-lettered whole (a sender that kept crashing
    /// on it), so each job is listed, filtered and replayed as itself.
    public static func records(
        body: Data, properties: AMQPProperties, routingKey: String, topology: LivelineTopology, now: Date
    ) -> [DeadLetterRecord] {
        let lines = properties.contentType == PushJobBundle.contentType ? PushJobBundle.lines(of: body) : []
        guard !lines.isEmpty else {
            return [record(body: body, properties: properties, routingKey: routingKey, topology: topology, now: now)]
        }
        return lines.map { line in
            var single = properties
            single.contentType = "application/json"
            single.messageID = (try? PushJob(json: line))?.jobId  // else its id comes from its bytes
            return record(body: line, properties: single, routingKey: routingKey, topology: topology, now: now)
        }
    }

    /// The record for one message taken off the dead-letter queue at `now`.
    public static func record(
        body: Data, properties: AMQPProperties, routingKey: String, topology: LivelineTopology, now: Date
    ) -> DeadLetterRecord {
        let headers = properties.headers
        let deaths = AMQPDeath.history(from: headers).map {
            DeadLetterRecord.Death(
                queue: $0.queue, reason: $0.reason, count: $0.count, exchange: $0.exchange, routingKeys: $0.routingKeys,
                time: $0.time)
        }
        if headers[SenderHeaders.reason] != nil, let letter = try? JSONDecoder().decode(DeadLetter.self, from: body) {
            return record(letter, headers: headers, messageID: properties.messageID, deaths: deaths, now: now)
        }
        return brokerRecord(body: body, properties: properties, deaths: deaths, topology: topology, now: now)
    }

    /// A letter Liveline wrote: its own fields, the original body inside.
    private static func record(
        _ letter: DeadLetter, headers: AMQPTable, messageID: String?, deaths: [DeadLetterRecord.Death], now: Date
    ) -> DeadLetterRecord {
        let source: DeadLetterRecord.Source
        switch headers[DeadLetterHeaders.source]?.stringValue {
        case "translator": source = .translator
        case "sender": source = .sender
        default: source = letter.jobId != nil || letter.reason == .invalidJob ? .sender : .translator
        }
        let kind: DeadLetterRecord.PayloadKind = source == .sender ? .job : .event
        var record = DeadLetterRecord(
            id: messageID ?? "letter:" + digest(letter.originalBody, letter.reason.rawValue, "\(letter.lastAttemptAt)"),
            reason: letter.reason.rawValue, source: source, message: letter.message, domain: letter.domain,
            activityID: letter.activityId, eventID: letter.eventId, jobID: letter.jobId, payloadKind: kind,
            body: letter.originalBody, routingKey: "", attempts: letter.attempts,
            firstFailedAt: letter.firstAttemptAt.date, lastFailedAt: letter.lastAttemptAt.date, keptAt: now, deaths: deaths)
        record.routingKey = routingKey(for: record)
        return record
    }

    /// A message the broker dead-lettered itself: what it was is told by the queue it died in.
    private static func brokerRecord(
        body: Data, properties: AMQPProperties, deaths: [DeadLetterRecord.Death], topology: LivelineTopology, now: Date
    ) -> DeadLetterRecord {
        let newest = deaths.first
        let kind: DeadLetterRecord.PayloadKind
        // By stage, whatever the shard count was when it died.
        switch newest?.queue {
        case let queue? where topology.translate.isShard(queue): kind = .event
        case let queue? where topology.send.isShard(queue): kind = .job
        default: kind = (try? PushJob(json: body)) != nil ? .job : EventIdentity(peeking: body) != nil ? .event : .unknown
        }
        let reason = newest?.reason ?? "unknown"
        let queue = newest?.queue ?? "?"
        let deliveries = properties.headers["x-delivery-count"]?.intValue.map { Int($0) + 1 } ?? 1
        var record = DeadLetterRecord(
            // Stable for this dead-lettering (a redelivery to the keeper has the same history),
            // new for the next one (the broker bumps the count and the time).
            id: "broker:" + digest(
                properties.messageID.map { Data($0.utf8) } ?? body, queue, reason, "\(newest?.count ?? 0)",
                "\(newest?.time?.timeIntervalSince1970 ?? 0)"),
            reason: reason, source: .broker,
            message: "the broker dead-lettered it from \(queue): \(explanation(of: reason))",
            payloadKind: kind, body: body, routingKey: newest?.routingKeys.first ?? "",
            attempts: deliveries, firstFailedAt: deaths.compactMap(\.time).min() ?? properties.timestamp ?? now,
            lastFailedAt: newest?.time ?? now, keptAt: now, deaths: deaths)
        switch kind {
        case .job:
            if let job = try? PushJob(json: body) {
                record.domain = job.domain
                record.activityID = job.activityId
                record.eventID = job.eventId
                record.jobID = job.jobId
            }
        case .event:
            let identity = EventIdentity(peeking: body)
            record.domain = identity?.domain
            record.activityID = identity?.activityId
            record.eventID = identity?.eventId ?? properties.messageID
        case .unknown:
            break
        }
        if record.routingKey.isEmpty { record.routingKey = routingKey(for: record) }
        return record
    }

    /// The routing key a replay republishes with: the event's type for events (what
    /// producers publish with), `<domain>.<event>` for jobs (what the translator does).
    static func routingKey(for record: DeadLetterRecord) -> String {
        switch record.payloadKind {
        case .event:
            return EventIdentity(peeking: record.body)?.type ?? "replay"
        case .job:
            guard let job = try? PushJob(json: record.body) else { return "replay" }
            return "\(job.domain).\(job.event.rawValue)"
        case .unknown:
            return "replay"
        }
    }

    /// What the broker's reasons mean, for people.
    static func explanation(of reason: String) -> String {
        switch reason {
        case "delivery_limit": "delivery_limit, redelivered past the queue's limit (a worker kept failing or crashing on it)"
        case "rejected": "rejected by a consumer without requeue"
        case "expired": "expired, its time to live ran out"
        case "maxlen": "maxlen, the queue was full"
        default: reason
        }
    }

    private static func digest(_ body: Data, _ parts: String...) -> String {
        var hash = SHA256()
        hash.update(data: body)
        for part in parts {
            hash.update(data: Data([0]))
            hash.update(data: Data(part.utf8))
        }
        return Hex.encode(Array(hash.finalize().prefix(16)))
    }
}
