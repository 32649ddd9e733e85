import Configuration
import Foundation
import LivelineCore
import LivelineMessaging
import LivelineServices

/// Settings of the translator and sender, read under `liveline.` like ``LivelineSettings``.
public struct WorkerSettings: Sendable {
    /// The domains and their policies: the JSON file at `liveline.translator.domains-file`
    /// (a `TranslatorConfiguration`), or the standard ride, delivery and score domains for
    /// `liveline.translator.bundle-id` (default `com.example.liveline`).
    public var translator: TranslatorConfiguration
    /// `liveline.trace.retention-days`, default 7: how long each activity's trace is kept.
    /// Every translator and sender prunes older lines hourly.
    public var traceRetentionDays: Int
    /// `liveline.retention.activity-days`, default 30: how long an ended activity is kept,
    /// with its tokens, budget and channel records.
    public var activityRetentionDays: Int
    /// `liveline.retention.push-to-start-days`, default 180: how long a push-to-start token
    /// the app has not registered again is kept.
    public var pushToStartRetentionDays: Int
    /// `liveline.retention.dead-letter-days`, default 90: how long a dead letter is kept
    /// (longer than activities, so a late look at an incident still finds its letters).
    public var deadLetterRetentionDays: Int
    /// `liveline.retention.follow-days`, default 30: how long the follows of a user with no
    /// device left are kept.
    public var followRetentionDays: Int
    /// `liveline.retention.audit-days`, default 365: how long the audit of on-call actions
    /// (`liveline audit`) is kept.
    public var auditRetentionDays: Int
    /// `liveline.retention.event-id-days`, default 7: how long the api remembers the id of an
    /// event it took over HTTPS, so a producer's retry publishes nothing new.
    public var eventIDRetentionDays: Int
    /// `liveline.keeper.enabled`, default true: the sender also runs the dead-letter keeper,
    /// which moves `liveline.dead` into the store for `liveline dlq`.
    public var keeperEnabled: Bool
    /// `liveline.retry.delays-seconds`, default `5,30,120,600`: the sender's retry tiers,
    /// each a queue whose messages wait that long (`liveline.retry.5s`, `…2m`), tried in
    /// order before a job is dead-lettered `retries-exhausted`. Strictly increasing.
    public var retryTiers: [LivelineTopology.RetryTier]
    /// `liveline.translator.jobs-per-message`, default 16: the most jobs of one event the
    /// translator puts in one message (a game's start for its audience); 1 sends each alone.
    public var jobsPerMessage: Int
    /// `liveline.translator.linger-ms`, default 10: the longest a batch that is not full
    /// waits for more events while they keep coming (``TranslatorSettings/linger``). Larger
    /// batches cost less CPU per event at moderate rates, and wait that much longer.
    public var lingerMilliseconds: Int
    /// `liveline.translator.max-batch`, default 250: the most events in one batch (one store
    /// load, one transaction, one publish; ``TranslatorSettings/maxBatchSize``). The prefetch
    /// grows with it, so six batches still fit.
    public var maxBatchSize: Int
    /// `liveline.sender.trace-flush-ms`, default 50: the longest the sender's trace lines, and
    /// the acks of their jobs, wait for their group commit (``SenderSettings/traceFlushInterval``).
    public var traceFlushMilliseconds: Int
    /// `liveline.translate.shards`, default 1: the translate stage's shard queues. A shard is
    /// the unit of order and of scaling: at most this many translators work at once, and the
    /// rest stand by. One suits one machine, where a second translator only adds cost; a
    /// cluster sets as many as it will ever run translators (the manifests set 8). Every
    /// worker and on-call command of a deployment must agree, and a worker refuses to start
    /// when the broker holds another count (change it with `liveline reshard`).
    public var translateShards: Int
    /// `liveline.send.shards`, default 1: the send stage's shard queues, as for translate.
    public var sendShards: Int
    /// `liveline.channels.sweep-orphans`, default true: at start, a sender with a channel domain
    /// deletes the channels this deployment created at APNs and no longer knows live
    /// (``ChannelSweeper``). Never another deployment's.
    public var sweepsOrphanChannels: Bool
    /// `liveline.outcomes.domains`, default none: the domains whose events' outcomes are
    /// published to `liveline.outcomes` (comma-separated, or `*` for all). Each outcome is a
    /// message of its own, so it is off unless a producer binds a queue for it.
    public var outcomes: OutcomeDomains

    public init(config: ConfigReader) throws {
        if let path = config.string(forKey: "translator.domains-file") {
            let data = Data(try LivelineSettings.read(path, for: "translator.domains-file").utf8)
            do {
                translator = try JSONDecoder().decode(TranslatorConfiguration.self, from: data)
            } catch {
                throw SettingsError("liveline.translator.domains-file \(path): \(error)")
            }
        } else {
            translator = .standard(bundleId: config.string(forKey: "translator.bundle-id", default: "com.example.liveline"))
        }

        traceRetentionDays = try LivelineSettings.integer(config, "trace.retention-days", in: 1...36_500, default: 7)
        activityRetentionDays = try LivelineSettings.integer(config, "retention.activity-days", in: 1...36_500, default: 30)
        pushToStartRetentionDays = try LivelineSettings.integer(config, "retention.push-to-start-days", in: 1...36_500, default: 180)
        deadLetterRetentionDays = try LivelineSettings.integer(config, "retention.dead-letter-days", in: 1...36_500, default: 90)
        followRetentionDays = try LivelineSettings.integer(config, "retention.follow-days", in: 1...36_500, default: 30)
        auditRetentionDays = try LivelineSettings.integer(config, "retention.audit-days", in: 1...36_500, default: 365)
        eventIDRetentionDays = try LivelineSettings.integer(config, "retention.event-id-days", in: 1...36_500, default: 7)
        keeperEnabled = try LivelineSettings.flag(config, "keeper.enabled") ?? true
        sweepsOrphanChannels = try LivelineSettings.flag(config, "channels.sweep-orphans") ?? true
        retryTiers = try Self.retryTiers(config.string(forKey: "retry.delays-seconds"))
        let translatorDefaults = TranslatorSettings()
        jobsPerMessage = try LivelineSettings.integer(
            config, "translator.jobs-per-message", in: 1...1_000, default: translatorDefaults.jobsPerMessage)
        lingerMilliseconds = try LivelineSettings.integer(
            config, "translator.linger-ms", in: 0...1_000, default: Int(translatorDefaults.linger / .milliseconds(1)))
        maxBatchSize = try LivelineSettings.integer(config, "translator.max-batch", in: 1...1_000, default: translatorDefaults.maxBatchSize)
        translateShards = try LivelineSettings.integer(config, "translate.shards", in: 1...LivelineTopology.maximumShards, default: 1)
        sendShards = try LivelineSettings.integer(config, "send.shards", in: 1...LivelineTopology.maximumShards, default: 1)
        traceFlushMilliseconds = try LivelineSettings.integer(
            config, "sender.trace-flush-ms", in: 1...1_000, default: Int(SenderSettings().traceFlushInterval / .milliseconds(1)))
        outcomes = OutcomeDomains(parsing: config.string(forKey: "outcomes.domains") ?? "")
        let known = Set(translator.domains.map(\.name))
        if let unknown = outcomes.named.subtracting(known).sorted().first {
            throw SettingsError(
                "liveline.outcomes.domains names \(unknown), which is not a configured domain (\(known.sorted().joined(separator: ", ")))")
        }
    }

    /// The broker names and retry tiers the workers declare and use.
    public var topology: LivelineTopology {
        var topology = LivelineTopology(translateShards: translateShards, sendShards: sendShards)
        topology.retryTiers = retryTiers
        return topology
    }

    static func retryTiers(_ text: String?) throws -> [LivelineTopology.RetryTier] {
        guard let text else { return LivelineTopology.RetryTier.defaults }
        let fields = text.split(separator: ",", omittingEmptySubsequences: false)
        let delays = fields.compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !delays.isEmpty, delays.count == fields.count, delays.allSatisfy({ $0 >= 1 }),
            zip(delays, delays.dropFirst()).allSatisfy({ $0 < $1 })
        else {
            throw SettingsError(
                "liveline.retry.delays-seconds must be whole seconds, at least 1 and rising, comma-separated "
                    + "(for example 5,30,120,600), not \(text)")
        }
        return delays.map { .init(name: $0 % 60 == 0 ? "\($0 / 60)m" : "\($0)s", delay: .seconds($0)) }
    }

    /// The translator's batching: the linger, the batch size and a prefetch with room for six
    /// batches (the pipeline's stages and one arriving), never below the default's.
    public var translatorSettings: TranslatorSettings {
        let prefetch = max(Int(TranslatorSettings().prefetch), 6 * maxBatchSize)
        return TranslatorSettings(
            prefetch: UInt16(prefetch), maxBatchSize: maxBatchSize, linger: .milliseconds(lingerMilliseconds),
            jobsPerMessage: jobsPerMessage)
    }

    /// The sender's settings: the topology and the trace's group commit.
    public var senderSettings: SenderSettings {
        SenderSettings(topology: topology, traceFlushInterval: .milliseconds(traceFlushMilliseconds), outcomes: outcomes)
    }

    /// The pruner's settings from the retention days.
    public var retention: RetentionPruner.Settings {
        RetentionPruner.Settings(
            trace: .seconds(traceRetentionDays * 86_400), activities: .seconds(activityRetentionDays * 86_400),
            pushToStartTokens: .seconds(pushToStartRetentionDays * 86_400), deadLetters: .seconds(deadLetterRetentionDays * 86_400),
            follows: .seconds(followRetentionDays * 86_400), audit: .seconds(auditRetentionDays * 86_400),
            eventClaims: .seconds(eventIDRetentionDays * 86_400))
    }
}
