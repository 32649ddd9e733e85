import Foundation
import LivelineAMQP
import LivelineCore
import LivelineMessaging
import LivelineStore

// Tests: Tests/LivelineServicesTests/GamePipelineTests.swift

/// Forgets one user (`DELETE /v1/me`, `liveline user forget`): first ends the user's live
/// activities on their devices, an `end` dismissed at once (``Translator/erasureEnd(of:updateTokens:now:)``)
/// published with confirms to the send shards, then removes from the store everything that
/// names the user (``ActivityStore/forgetUser(_:sharedDomains:)``). A shared activity the
/// user followed stays, without them. Running it again removes nothing more.
public struct UserEraser: Sendable {
    /// What one erasure did.
    public struct Summary: Sendable, Hashable, Codable {
        /// Live activities ended on the user's devices first.
        public var ended = 0
        /// The end pushes published for them.
        public var endPushes = 0
        public var erased = UserErasure()

        /// Nothing was stored for the user.
        public var isEmpty: Bool { ended == 0 && erased.total == 0 }
    }

    private let store: any ActivityStore
    private let translator: Translator
    private let publisher: AMQPConnection
    private let topology: LivelineTopology

    public init(store: any ActivityStore, translator: Translator, publisher: AMQPConnection, topology: LivelineTopology) {
        self.store = store
        self.translator = translator
        self.publisher = publisher
        self.topology = topology
    }

    public func forget(_ userID: String, now: Date = Date()) async throws -> Summary {
        var summary = Summary()
        let requests = try await store.liveActivities(ofUser: userID)
        let stored = requests.isEmpty ? [:] : try await store.loadSnapshots(requests, whileWriting: false)
        var jobs: [PushJob] = []
        for request in requests {
            guard let activity = stored[request.activityID], let record = activity.activity,
                let domain = translator.domain(named: record.domain),
                let snapshot = ActivityState.snapshot(of: record, kind: domain.kind)
            else { continue }
            let ends = translator.erasureEnd(
                of: snapshot, updateTokens: activity.updateTokens.map { ($0.token, $0.environment) }, now: now)
            guard !ends.isEmpty else { continue }
            summary.ended += 1
            jobs += ends
        }
        if !jobs.isEmpty {
            let publishedAt = EventTime(now)
            let messages = BatchProcessor.byShard(jobs[...], topology: topology).map {
                OutgoingMessage.jobs($0[...], topology: topology, publishedAt: publishedAt)
            }
            // Confirmed before anything is forgotten: an end that never left would leave the
            // activity on the device with nobody to end it.
            try await publisher.publish(contentsOf: messages)
            summary.endPushes = jobs.count
        }
        summary.erased = try await store.forgetUser(
            userID, sharedDomains: Set(translator.configuration.domains.filter(\.shared).map(\.name)))
        return summary
    }
}
