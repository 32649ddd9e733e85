import Foundation
import LivelineAMQP
import LivelineCore
import Synchronization

// Tests: Tests/LivelineServicesTests/SenderDeliveryTests.swift, Tests/LivelineServicesTests/SenderResilienceTests.swift

/// One job as the sender takes it off the send queue: its own bytes (the retry tier or the
/// dead letter gets exactly these), its message id, and its delivery's headers.
struct IncomingJob: Sendable {
    var body: Data
    var messageID: String?
    var headers: AMQPTable
    /// Its lane (``PushTarget/laneKey(activity:)``), or nil for none.
    var lane: String?
    /// The body decoded, when reading the delivery did that already (a bundle's jobs);
    /// nil when the send's own task decodes it.
    var decoded: Result<PushJob, any Error>? = nil
    /// The broker delivered its message before (to a sender that died or lost its
    /// connection holding it): that sender may have sent newer jobs of its lane meanwhile.
    var redelivered = false

    /// Sent again by `liveline dlq replay`, re-stamped to show after newer pushes.
    var replayed: Bool { headers[DeadLetterHeaders.replayOf] != nil }

    /// The jobs `delivery` carries, in queue order: itself, or each line of a
    /// ``PushJobBundle``. A bundle's jobs are decoded here, since each has its own lane;
    /// a single job's lane is in its headers (or, before lanes were per target, its
    /// activity's), and its task decodes it.
    static func jobs(in delivery: AMQPDelivery) -> [IncomingJob] {
        let headers = delivery.properties.headers
        let lines = delivery.properties.contentType == PushJobBundle.contentType ? PushJobBundle.lines(of: delivery.body) : []
        guard !lines.isEmpty else {
            // A single job; an empty bundle too, so it is dead-lettered whole as no job.
            return [IncomingJob(
                body: delivery.body, messageID: delivery.properties.messageID, headers: headers,
                lane: (headers[SenderHeaders.lane] ?? headers[SenderHeaders.activity])?.stringValue,
                redelivered: delivery.redelivered)]
        }
        return lines.map { line in
            let decoded = Result { try PushJob(json: line) }
            let job = try? decoded.get()
            return IncomingJob(
                body: line, messageID: job?.jobId, headers: headers,
                lane: job.map { $0.target.laneKey(activity: $0.activityId) }, decoded: decoded,
                redelivered: delivery.redelivered)
        }
    }
}

/// Acks a delivery once every job it carries is settled, or requeues it when any of them
/// could not be recorded: the jobs already sent come again, as after a crash, and their
/// lanes and the send gate treat them as such.
final class DeliverySettlement: Sendable {
    private let delivery: AMQPDelivery
    private let state: Mutex<(remaining: Int, failed: Bool)>
    private let unsettled: UnsettledDeliveries?

    init(_ delivery: AMQPDelivery, jobs: Int, unsettled: UnsettledDeliveries? = nil) {
        self.delivery = delivery
        self.state = Mutex((remaining: jobs, failed: false))
        self.unsettled = unsettled
        unsettled?.received()
    }

    var deliveryTag: UInt64 { delivery.deliveryTag }

    /// Settles one job: `recorded` says its outcome was recorded.
    func settle(recorded: Bool) {
        let outcome = state.withLock { state -> Bool? in
            state.remaining -= 1
            if !recorded { state.failed = true }
            return state.remaining == 0 ? !state.failed : nil
        }
        switch outcome {
        case true?:
            delivery.ack()
            unsettled?.settled()
        case false?:
            delivery.nack(requeue: true)
            unsettled?.settled()
        case nil: break
        }
    }
}
