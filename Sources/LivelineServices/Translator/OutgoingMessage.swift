import Foundation
import LivelineAMQP
import LivelineCore
import LivelineMessaging

// Tests: Tests/LivelineServicesTests/TranslatorServiceTests.swift

/// The AMQP messages the translator publishes: push jobs and dead letters. Public for the
/// benchmarks, which queue jobs exactly as the translator does.
public enum OutgoingMessage {
    /// A push job for `liveline.push`: routing key its send shard's
    /// (``LivelineMessaging/LivelineTopology/sendShard(lane:)``), `message_id` = job id, so a
    /// republished job is recognisably the same one.
    public static func job(_ job: PushJob, topology: LivelineTopology, publishedAt: EventTime) -> AMQPMessage {
        let lane = job.target.laneKey(activity: job.activityId)
        return AMQPMessage(
            exchange: topology.pushExchange,
            routingKey: topology.sendRoutingKey(shard: topology.sendShard(lane: lane)),
            body: job.encoded(),
            properties: AMQPProperties(
                contentType: "application/json",
                headers: [
                    TranslatorHeaders.activity: .string(job.activityId),
                    TranslatorHeaders.lane: .string(lane),
                    TranslatorHeaders.domain: .string(job.domain),
                    TranslatorHeaders.sequence: .int(job.sequence),
                    TranslatorHeaders.event: .string(job.event.rawValue),
                    TranslatorHeaders.publishedAt: .int(publishedAt.millisecondsSince1970),
                ],
                persistent: true,
                messageID: job.jobId,
                timestamp: job.eventTime.date
            ),
            mandatory: true
        )
    }

    /// One message for `jobs`, all for one send shard: the job itself when it is alone, else
    /// a ``PushJobBundle``, with the first job's routing key and headers but no lane (the
    /// sender takes each job's lane from the job) and the number of jobs in `x-liveline-jobs`.
    static func jobs(_ jobs: ArraySlice<PushJob>, topology: LivelineTopology, publishedAt: EventTime) -> AMQPMessage {
        let first = jobs[jobs.startIndex]
        var message = job(first, topology: topology, publishedAt: publishedAt)
        guard jobs.count > 1 else { return message }
        message.body = PushJobBundle.encode(jobs)
        message.properties.contentType = PushJobBundle.contentType
        message.properties.headers[TranslatorHeaders.lane] = nil
        message.properties.headers[TranslatorHeaders.jobs] = .int(Int64(jobs.count))
        // Stable across a republish of the same batch, like a single job's.
        message.properties.messageID = "\(first.jobId)+\(jobs.count)"
        return message
    }

    /// A dead letter for `liveline.dead` (fanout; the routing key is the reason for readers).
    static func deadLetter(_ letter: DeadLetter, encoder: JSONEncoder, topology: LivelineTopology) throws -> AMQPMessage {
        var headers: AMQPTable = [
            TranslatorHeaders.reason: .string(letter.reason.rawValue), DeadLetterHeaders.source: "translator",
        ]
        if let domain = letter.domain { headers[TranslatorHeaders.domain] = .string(domain) }
        if let activity = letter.activityId { headers[TranslatorHeaders.activity] = .string(activity) }
        return AMQPMessage(
            exchange: topology.deadExchange,
            routingKey: letter.reason.rawValue,
            body: try encoder.encode(letter),
            properties: AMQPProperties(
                contentType: "application/json", headers: headers, persistent: true,
                // A fresh id: the keeper stores each letter once by it, and the same event can
                // be dead-lettered again after a replay.
                messageID: UUID().uuidString.lowercased(), timestamp: letter.lastAttemptAt.date
            ),
            mandatory: true
        )
    }
}
