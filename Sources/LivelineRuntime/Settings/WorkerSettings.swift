import Configuration
import Foundation
import LivelineCore
import LivelineMessaging
import LivelineServices
import LivelineStore

// Tests: Tests/LivelineRuntimeTests/RetryTierSettingsTests.swift

/// Settings of the translator and sender, each read through its declaration in ``Setting``.
public struct WorkerSettings: Sendable {
    /// The domains and their policies: the JSON file at ``Setting/domainsFile`` (a
    /// `TranslatorConfiguration`), or the standard ride, delivery and score domains for
    /// ``Setting/bundleID``.
    public var translator: TranslatorConfiguration
    /// ``Setting/traceRetention``: every translator and sender prunes older lines hourly.
    public var traceRetentionDays: Int
    /// ``Setting/activityRetention``.
    public var activityRetentionDays: Int
    /// ``Setting/pushToStartRetention``.
    public var pushToStartRetentionDays: Int
    /// ``Setting/deadLetterRetention``.
    public var deadLetterRetentionDays: Int
    /// ``Setting/followRetention``.
    public var followRetentionDays: Int
    /// ``Setting/auditRetention``.
    public var auditRetentionDays: Int
    /// ``Setting/eventIDRetention``.
    public var eventIDRetentionDays: Int
    /// ``Setting/pruneBusyPercent``.
    public var pruneBusyPercent: Int
    /// ``Setting/keeperEnabled``: the sender also runs the dead-letter keeper, which moves
    /// `liveline.dead` into the store for `liveline dlq`.
    public var keeperEnabled: Bool
    /// ``Setting/retryDelays``: the sender's retry tiers, each a queue whose messages wait
    /// that long (`liveline.retry.5s`, `…2m`), tried in order before a job is dead-lettered
    /// `retries-exhausted`.
    public var retryTiers: [LivelineTopology.RetryTier]
    /// ``Setting/jobsPerMessage``.
    public var jobsPerMessage: Int
    /// ``Setting/audiencePage`` (``TranslatorSettings/audiencePage``).
    public var audiencePage: Int
    /// ``Setting/linger`` (``TranslatorSettings/linger``).
    public var lingerMilliseconds: Int
    /// ``Setting/maxBatch`` (``TranslatorSettings/maxBatchSize``).
    public var maxBatchSize: Int
    /// ``Setting/traceFlush`` (``SenderSettings/traceFlushInterval``).
    public var traceFlushMilliseconds: Int
    /// ``Setting/senderPrefetchMiB``: the sender's consuming connection holds at most this
    /// many MiB of delivered bodies unsettled (``LivelineAMQP/AMQPConfiguration/maximumHeldBytes``).
    public var senderPrefetchMiB: Int
    /// ``Setting/translateShards``. A shard is the unit of order and of scaling. Every
    /// worker and on-call command of a deployment must agree, and a worker refuses to start
    /// when the broker holds another count (change it with `liveline reshard`).
    public var translateShards: Int
    /// ``Setting/sendShards``, as for translate.
    public var sendShards: Int
    /// ``Setting/sweepOrphans`` (``ChannelSweeper``).
    public var sweepsOrphanChannels: Bool
    /// ``Setting/outcomeDomains``. Each outcome is a message of its own, so it is off unless a
    /// producer binds a queue for it.
    public var outcomes: OutcomeDomains

    /// The domains: the JSON file at ``Setting/domainsFile``, else the standard ones for
    /// ``Setting/bundleID`` and ``Setting/otherApps``.
    static func translator(_ config: ConfigReader) throws -> TranslatorConfiguration {
        if let path = Setting.domainsFile.text(config) {
            let data = Data(try Setting.read(path, for: Setting.domainsFile.name).utf8)
            do {
                return try JSONDecoder().decode(TranslatorConfiguration.self, from: data)
            } catch {
                throw SettingsError("\(Setting.domainsFile.name) \(path): \(error)")
            }
        }
        let apps = [Setting.bundleID.text(config)!] + Setting.otherApps.list(config)
        if let app = apps.first(where: { !AppKeys.isBundleID($0) }) {
            throw SettingsError(
                "\(app == apps[0] ? Setting.bundleID.name : Setting.otherApps.name): \(app) is not a bundle id such as com.example.rides")
        }
        return .standard(bundleId: apps[0], otherApps: Array(apps.dropFirst()))
    }

    public init(config: ConfigReader) throws {
        try self.init(config: config, domains: Self.translator(config))
    }

    /// With the domains that ``LivelineSettings/domains`` holds, so the domains file is read
    /// once, and the two cannot differ.
    public init(config: ConfigReader, domains: TranslatorConfiguration) throws {
        translator = domains

        traceRetentionDays = try Setting.traceRetention.integer(config)
        activityRetentionDays = try Setting.activityRetention.integer(config)
        pushToStartRetentionDays = try Setting.pushToStartRetention.integer(config)
        deadLetterRetentionDays = try Setting.deadLetterRetention.integer(config)
        followRetentionDays = try Setting.followRetention.integer(config)
        auditRetentionDays = try Setting.auditRetention.integer(config)
        eventIDRetentionDays = try Setting.eventIDRetention.integer(config)
        pruneBusyPercent = try Setting.pruneBusyPercent.integer(config)
        keeperEnabled = try Setting.keeperEnabled.flag(config)
        sweepsOrphanChannels = try Setting.sweepOrphans.flag(config)
        retryTiers = try Self.retryTiers(Setting.retryDelays.text(config)!)
        jobsPerMessage = try Setting.jobsPerMessage.integer(config)
        audiencePage = try Setting.audiencePage.integer(config)
        lingerMilliseconds = try Setting.linger.integer(config)
        maxBatchSize = try Setting.maxBatch.integer(config)
        translateShards = try Setting.translateShards.integer(config)
        sendShards = try Setting.sendShards.integer(config)
        traceFlushMilliseconds = try Setting.traceFlush.integer(config)
        senderPrefetchMiB = try Setting.senderPrefetchMiB.integer(config)
        outcomes = OutcomeDomains(parsing: Setting.outcomeDomains.text(config) ?? "")
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

    static func retryTiers(_ text: String) throws -> [LivelineTopology.RetryTier] {
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
            jobsPerMessage: jobsPerMessage, audiencePage: audiencePage)
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
            eventClaims: .seconds(eventIDRetentionDays * 86_400), busyShare: Double(pruneBusyPercent) / 100)
    }
}

extension TranslatorConfiguration {
    /// Each domain's app and each attributes type's, for the store's migration to app keys.
    public var appLayout: AppLayout {
        AppLayout(
            defaultApp: defaultApp,
            appOfDomain: Dictionary(domains.map { ($0.name, $0.bundleId) }) { first, _ in first },
            appOfAttributesType: Dictionary(domains.map { ($0.attributesType, $0.bundleId) }) { first, _ in first })
    }
}
