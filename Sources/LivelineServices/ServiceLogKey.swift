import LivelineLogging

// Tests: Tests/LivelineRuntimeTests/LogKeyTests.swift

/// Every logger metadata key of the translator, the sender, the dead-letter keeper and the
/// trace, prefixed by the part that logs it.
public enum ServiceLogKey: String, LogKey {
    case translatorQueue = "translator.queue"
    case translatorPrefetch = "translator.prefetch"
    case translatorBatchMaximum = "translator.batch.max"
    case translatorBatchSize = "translator.batch.size"
    case translatorActivity = "translator.activity"
    /// The priority-10 budget the store holds, against what the batch planned.
    case translatorBudgetStored = "translator.budget.store"
    case translatorBudgetPlanned = "translator.budget.planned"
    case translatorError = "translator.error"

    case senderQueue = "sender.queue"
    case senderPrefetch = "sender.prefetch"
    case senderInFlight = "sender.in_flight"
    case senderDeliveryTag = "sender.delivery_tag"
    case senderError = "sender.error"

    /// One push job: its id, activity, target (a token only by prefix) and APNs reason.
    case pushJobID = "push.job_id"
    case pushActivityID = "push.activity_id"
    case pushTarget = "push.target"
    case pushReason = "push.reason"

    case channelDomain = "channel.domain"
    case channelKey = "channel.key"
    case channelError = "channel.error"
    case channelSwept = "channel.swept"
    case channelOrphans = "channel.orphans"
    case channelBundle = "channel.bundle"

    case deadLetterQueue = "dlq.queue"
    case deadLetterCount = "dlq.count"
    case deadLetterNew = "dlq.new"
    case deadLetterReasons = "dlq.reasons"
    case deadLetterBatchSize = "dlq.batch.size"
    case deadLetterError = "dlq.error"

    /// A stage's shards: which stage, which shard, how many the worker holds now.
    case shardStage = "shard.stage"
    case shardIndex = "shard.index"
    case shardHeld = "shard.held"
    case shardError = "shard.error"

    case traceEntries = "trace.entries"
    case pruneRemoved = "prune.removed"
    case pruneError = "prune.error"
    case traceError = "trace.error"
}
