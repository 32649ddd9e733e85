import Foundation
import LivelineAPNs
import LivelineCore
import LivelineLogging
import LivelineStore
import Logging
import ServiceLifecycle

// Tests: Tests/LivelineServicesTests/SenderDeliveryTests.swift

/// Deletes the broadcast channels nobody will hear again. The sender deletes a channel as
/// soon as its activity's end is delivered; this catches the rest (an end that was
/// dead-lettered, a game that never ended, a worker that stopped between the end and the
/// delete), because an app holds at most 10,000 channels per environment at Apple.
///
/// At start it compares APNs' own list (`allChannelIDs`) with the store and deletes the
/// orphans: channels APNs has that this deployment created (``ActivityStore/recordCreatedChannel(_:at:)``)
/// and does not know live, such as one created by a worker that stopped before recording it.
/// A channel another deployment of the same app and environment created is never touched
/// (staging and development side by side), and ``Settings/sweepsOrphans`` turns the orphan
/// sweep off. Then, every `interval`, it deletes the live channels whose activity ended more
/// than `endGrace` ago (its end had time to go out, retries included), started more than
/// `lifetime` ago (iOS ends an activity after 8 hours and removes it at most 4 hours later),
/// or never started and had no event for `idle` (a game abandoned before kick-off). The clock
/// is the activity's start, not its first event: a game scheduled a day ahead keeps its
/// channel. A live game's channel is never deleted.
public struct ChannelSweeper: Service {
    public struct Settings: Sendable {
        public var interval: Duration
        public var endGrace: Duration
        public var lifetime: Duration
        /// How long an orphan candidate must stay unknown to the store before it is deleted:
        /// a worker records a channel just after APNs created it.
        public var orphanGrace: Duration
        /// Whether the sweeper deletes this deployment's orphans at start
        /// (`liveline.channels.sweep-orphans`, default true).
        public var sweepsOrphans: Bool
        /// How long an activity that never started may go without an event before its
        /// channel is deleted. Default 7 days.
        public var idle: Duration
        /// Channels deleted per sweep, at most.
        public var batchSize: Int

        public init(
            interval: Duration = .seconds(600), endGrace: Duration = .seconds(3_600), lifetime: Duration = .seconds(12 * 3_600),
            orphanGrace: Duration = .seconds(60), sweepsOrphans: Bool = true, idle: Duration = .seconds(7 * 86_400),
            batchSize: Int = 500
        ) {
            self.interval = interval
            self.endGrace = endGrace
            self.lifetime = lifetime
            self.orphanGrace = orphanGrace
            self.sweepsOrphans = sweepsOrphans
            self.idle = idle
            self.batchSize = batchSize
        }
    }

    private let store: any ActivityStore
    private let clients: APNsClientDirectory
    /// The apps of the channel domains, whose channels APNs lists for the orphan sweep.
    private let apps: [String]
    /// How a channel's key names its app.
    private let keys: AppKeys
    private let keeper: ChannelKeeper
    private let settings: Settings
    private let logger: Logger

    /// - Parameters:
    ///   - apps: the apps of the channel domains (`DomainConfiguration.apps`).
    ///   - keys: how a channel's key names its app (``TranslatorConfiguration/keys``).
    public init(
        store: any ActivityStore, clients: APNsClientDirectory, apps: [String], keys: AppKeys, settings: Settings = Settings(),
        logger: Logger
    ) {
        self.store = store
        self.clients = clients
        self.apps = Set(apps).sorted()
        self.keys = keys
        self.keeper = ChannelKeeper(store: store, logger: logger)
        self.settings = settings
        self.logger = logger
    }

    public func run() async throws {
        if settings.sweepsOrphans { _ = await cancelWhenGracefulShutdown { await deleteOrphans() } }
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            do {
                let swept = try await sweep(now: Date())
                if swept > 0 { logger.info("channels swept", metadata: ServiceLogKey.metadata([.channelSwept: "\(swept)"])) }
            } catch {
                logger.warning("could not sweep channels", metadata: ServiceLogKey.metadata([.channelError: "\(error)"]))
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: settings.interval) }
        }
    }

    /// One sweep of the store's channels that are due; returns how many were deleted.
    public func sweep(now: Date) async throws -> Int {
        let due = try await store.channelsToSweep(
            endedBefore: now.addingTimeInterval(-TimeInterval(settings.endGrace.components.seconds)),
            startedBefore: now.addingTimeInterval(-TimeInterval(settings.lifetime.components.seconds)),
            idleBefore: now.addingTimeInterval(-TimeInterval(settings.idle.components.seconds)), limit: settings.batchSize)
        var deleted = 0
        for channel in due {
            // A channel lives in the channel environment of its key's app.
            let app = keys.app(of: channel.key)
            guard let client = clients.channelClient(bundleID: app) else {
                logger.warning("no APNs credentials to delete a channel", metadata: ServiceLogKey.metadata([
                    .channelDomain: "\(channel.domain)", .channelKey: "\(channel.key)",
                ]))
                continue
            }
            if try await keeper.closeChannel(domain: channel.domain, key: channel.key, channelID: channel.channelID, client: client, now: now) {
                deleted += 1
            }
        }
        return deleted
    }

    /// Deletes, for every app, the channels APNs lists that this deployment created and does
    /// not know live, after ``Settings/orphanGrace``; returns how many. Failures are logged,
    /// not fatal.
    @discardableResult
    public func deleteOrphans() async -> Int {
        var deleted = 0
        for bundle in apps {
            guard let client = clients.channelClient(bundleID: bundle) else { continue }
            do {
                // Created first: a channel created after APNs' list is not taken for gone.
                let created = try await store.createdChannelIDs()
                let listed = Set(try await client.allChannelIDs())
                let live = try await store.liveChannelIDs()
                // Deleted at APNs some other way (an expired sandbox, a person): nothing to sweep.
                try await store.forgetCreatedChannels(created.subtracting(listed).subtracting(live).sorted())
                var candidates = listed.intersection(created).subtracting(live)
                guard !candidates.isEmpty else { continue }
                try await Task.sleep(for: settings.orphanGrace)
                candidates.subtract(try await store.liveChannelIDs())
                for id in candidates.sorted() {
                    try await client.deleteChannel(id: id)
                    try await store.forgetCreatedChannels([id])
                    deleted += 1
                }
                logger.notice("orphan channels deleted at APNs", metadata: ServiceLogKey.metadata([
                    .channelBundle: "\(bundle)", .channelOrphans: "\(candidates.count)",
                ]))
            } catch {
                logger.warning("could not compare channels with APNs", metadata: ServiceLogKey.metadata([
                    .channelBundle: "\(bundle)", .channelError: "\(error)",
                ]))
            }
        }
        return deleted
    }
}
