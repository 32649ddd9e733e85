import Foundation
import LivelineAPNs
import LivelineLogging
import LivelineStore
import Logging

// Tests: Tests/LivelineServicesTests/SenderDeliveryTests.swift

/// Keeps one APNs broadcast channel per (domain, key), for example one per game: creates
/// it at APNs and records it in the store on first need, and deletes it once the
/// activity's end was broadcast, so channels never pile up at Apple (each app has a
/// limit) and apps stop being offered a channel that will never speak again.
///
/// The channel's key is the activity id: a broadcast domain runs one activity per
/// channel, so the end of that activity is the end of the channel.
public struct ChannelKeeper: Sendable {
    private let store: any SenderStore
    private let logger: Logger

    /// A keeper over `store`.
    public init(store: any SenderStore, logger: Logger = Logger(label: "liveline.sender.channels")) {
        self.store = store
        self.logger = logger
    }

    /// The live channel of (domain, key), created at APNs through `client` and recorded
    /// if there is none.
    ///
    /// When two workers race, the store keeps the first record; the loser deletes the
    /// channel it just made at APNs and uses the winner's.
    public func openChannel(
        domain: String, key: String, client: APNsClient,
        storagePolicy: APNsMessageStoragePolicy = .noMessageStored, now: Date = Date()
    ) async throws -> BroadcastChannel {
        if let existing = try await store.channel(domain: domain, key: key), existing.deletedAt == nil {
            return existing
        }
        let channelID = try await client.createChannel(storagePolicy: storagePolicy)
        // Noted first, so that a worker that stops before the record below leaves an orphan
        // this deployment's sweeper knows as its own.
        try await store.recordCreatedChannel(channelID, at: now)
        switch try await store.createChannel(BroadcastChannel(domain: domain, key: key, channelID: channelID, createdAt: now)) {
        case .created(let channel):
            logger.info("created broadcast channel", metadata: ServiceLogKey.metadata([.channelDomain: "\(domain)", .channelKey: "\(key)"]))
            return channel
        case .existing(let channel):
            do {
                try await client.deleteChannel(id: channelID)
                try await store.forgetCreatedChannels([channelID])
            } catch {
                // An orphan at APNs costs one slot of the app's channel quota until the
                // sweeper's next start deletes it.
                logger.warning("could not delete a channel that lost the creation race", metadata: ServiceLogKey.metadata([.channelError: "\(error)"]))
            }
            return channel
        }
    }

    /// Deletes the channel of (domain, key) at APNs and marks it deleted, if it is still
    /// the live channel with id `channelID`.
    ///
    /// - Returns: whether a live channel was closed.
    @discardableResult
    public func closeChannel(
        domain: String, key: String, channelID: String, client: APNsClient, now: Date = Date()
    ) async throws -> Bool {
        guard let channel = try await store.channel(domain: domain, key: key),
            channel.deletedAt == nil, channel.channelID == channelID
        else { return false }
        do {
            try await client.deleteChannel(id: channelID)
        } catch {
            // Already gone at APNs (an earlier attempt deleted it): only the record is left.
            guard Self.isAlreadyGone(error) else { throw error }
        }
        return try await store.markChannelDeleted(domain: domain, key: key, at: now)
    }

    private static func isAlreadyGone(_ error: APNsError) -> Bool {
        error.reason == .badChannelID || error.reason == .channelNotRegistered || error.status == 404
    }
}
