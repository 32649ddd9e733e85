import Foundation
import LivelineAPNs
import LivelineCore
import LivelineModels
import LivelineStore
import Logging

// Tests: Tests/LivelineServicesTests/TranslatorServiceTests.swift, Tests/LivelineServicesTests/GamePipelineTests.swift

/// Opens a shared activity's broadcast channel when its first event is translated, before
/// any push: the starts that follow carry its id in `input-push-channel`, and the api
/// serves it to apps that start the activity themselves (`GET /v1/channels/<domain>/<key>`).
///
/// The translator needs the apps' APNs credentials for this (the channel management
/// API); the sender still opens a channel it finds missing, as a fallback.
public struct ChannelOpener: Sendable {
    private let keeper: ChannelKeeper
    private let clients: APNsClientDirectory
    private let keys: AppKeys

    /// - Parameter keys: how the activities' keys name their apps, whose credentials open the channels.
    public init(store: any ActivityStore, clients: APNsClientDirectory, keys: AppKeys, logger: Logger) {
        self.keeper = ChannelKeeper(store: store, logger: logger)
        self.clients = clients
        self.keys = keys
    }

    /// The live channel id of `key` (an activity's key, ``AppKeys``) in `domain`, created at APNs
    /// for the key's app and stored if there is none, with the APNs environment it lives in.
    func channel(domain: DomainConfiguration, key: String) async throws -> (id: String, environment: APNsEnvironment) {
        let app = keys.app(of: key)
        guard let client = clients.channelClient(bundleID: app), let environment = clients.channelEnvironment(bundleID: app) else {
            throw ChannelOpenerError(description: "no APNs credentials for bundle id \(app) to open the channel of \(key)")
        }
        let policy: APNsMessageStoragePolicy = domain.channel.storesLatestMessage ? .mostRecentMessageStored : .noMessageStored
        let id = try await keeper.openChannel(domain: domain.name, key: key, client: client, storagePolicy: policy).channelID
        return (id, environment)
    }
}

/// A channel could not be opened for want of credentials.
struct ChannelOpenerError: Error, CustomStringConvertible {
    var description: String
}
