import Foundation
import LivelineCore

// Tests: Tests/LivelineStoreTests/ChangeConformanceTests.swift, Tests/LivelineStoreTests/SnapshotConformanceTests.swift

/// Activity state, tokens, budgets, channels and traces, as translators, senders and the api
/// share them.
///
/// Every operation is batch-first: a translator handles hundreds of events per transaction,
/// so one call covers a whole batch and each implementation spends one transaction on it.
/// Times are kept at millisecond precision.
///
/// Two implementations pass the same conformance suite: ``SQLiteLivelineStore`` (embedded,
/// one node) and ``PostgresLivelineStore`` (several nodes).
public protocol ActivityStore: DeadLetterStore {
    // MARK: Translator

    /// Loads, in one call, each requested activity with its update tokens, the user's
    /// push-to-start token for the attributes type and the user's preferences.
    ///
    /// - Parameter whileWriting: whether this process may write to the store while this loads
    ///   (the translator's batch before is still being stored). When it will not, the SQLite
    ///   store reads on its writer connection, whose page cache the batch's own transaction
    ///   then finds warm; when it may, on a reader, so that neither waits for the other.
    /// - Returns: one snapshot per distinct requested activity id, keyed by activity id.
    func loadSnapshots(_ requests: [SnapshotRequest], whileWriting: Bool) async throws -> [String: StoredActivity]

    /// Applies a batch of state changes and appends trace entries in one transaction.
    ///
    /// A change applies only if its event time is newer than the activity's last applied
    /// time and the activity has not ended; the check and the write are one atomic
    /// statement, so concurrent translators never lose a newer write. Changes are taken in
    /// order, so two changes of one activity in a batch behave as if applied one by one.
    ///
    /// A change to a pending row (made by an app's registration) whose owner differs from
    /// the event's user hands the row to the event's user and removes the tokens the
    /// other user registered: the domain service is the authority on ownership.
    ///
    /// - Returns: one outcome per change, in the same order.
    func applyChanges(_ changes: [ActivityChange], trace: [TraceEntry]) async throws -> [ChangeOutcome]

    /// ``applyChanges(_:trace:)``, then ``spendPriorityBudget(_:at:window:)`` for the demands
    /// whose change applied (or that name none), in one transaction where the store can: a
    /// second transaction wrote the pages the changes had just written again, and a crash
    /// between the two left sent pushes unspent. By default, the two calls one after the other.
    ///
    /// - Returns: one outcome per change, and the spent counts as the budget call returns them.
    func applyChanges(_ changes: [ActivityChange], trace: [TraceEntry], spending: BudgetDemands) async throws
        -> (outcomes: [ChangeOutcome], spent: [String: Int])

    /// Spends priority-10 budget: for each id, adds one per occurrence to the counter of
    /// the current window, starting a new window at `now` if the current one began
    /// `window` or longer ago.
    ///
    /// - Returns: the spent count after the increment, per activity id; ids without a row are absent.
    func spendPriorityBudget(_ activityIDs: [String], at now: Date, window: TimeInterval) async throws -> [String: Int]

    /// One page of a shared start's audience: the push-to-start tokens for `attributesType` of
    /// every device whose user follows at least one of `topics` and has not turned Live
    /// Activities off, one per device however many of the topics its user follows, ordered by
    /// user and device, from just after `after` (nil: the first), at most `limit`.
    ///
    /// Devices queued for a late start into `activityID` are left out: the late start starts
    /// them, and a device must not be started twice. A start read in pages meets them when a
    /// fan follows, or registers a device, after the first page was read and the start stored.
    func audience(
        topics: [String], attributesType: String, of activityID: String?, after: AudiencePosition?, limit: Int
    ) async throws -> [PushToStartToken]

    /// Claims up to `limit` late starts (``LateStart``), oldest first, of activities still live.
    /// Each is claimed once, by one caller, and stays claimed so that the device is never
    /// started twice into the activity; one whose device has no push-to-start token left, or
    /// whose user turned Live Activities off, is claimed and not returned. Late starts and
    /// start topics of activities that ended, or started before `startedAfter` (past iOS's
    /// 8 hours), are deleted.
    func claimLateStarts(now: Date, startedAfter: Date, limit: Int) async throws -> [LateStart]

    /// Gives back claimed late starts whose start could not be published, so a later claim
    /// sends them.
    func releaseLateStarts(_ starts: [LateStart]) async throws

    // MARK: Sender

    /// Deletes `token` (update or push-to-start) unless it was registered again at or after
    /// `registeredBefore` — APNs' 410 Unregistered timestamp.
    ///
    /// - Returns: how many registrations were deleted.
    func deleteToken(_ token: String, registeredBefore: Date) async throws -> Int

    /// Deletes `token` wherever it is registered (BadDeviceToken, DeviceTokenNotForTopic).
    ///
    /// - Returns: how many registrations were deleted.
    func deleteToken(_ token: String) async throws -> Int

    // MARK: Channels

    /// Notes that this deployment created `channelID` at APNs, the moment APNs answered and
    /// before ``createChannel(_:)``: only such channels are ever deleted as orphans, so two
    /// deployments on one app and environment never delete each other's. A deployment is its
    /// store.
    func recordCreatedChannel(_ channelID: String, at: Date) async throws

    /// The channels this deployment created that are not yet deleted at APNs, live or not.
    func createdChannelIDs() async throws -> Set<String>

    /// Forgets channels deleted at APNs other than through ``markChannelDeleted(domain:key:at:)``
    /// (orphans, and the loser of a creation race).
    func forgetCreatedChannels(_ channelIDs: [String]) async throws

    /// Records a channel created at APNs, unless a live one exists for (domain, key).
    func createChannel(_ channel: BroadcastChannel) async throws -> ChannelCreation

    /// The channel for (domain, key), deleted or not.
    func channel(domain: String, key: String) async throws -> BroadcastChannel?

    /// The ids of every live (not deleted) channel.
    func liveChannelIDs() async throws -> Set<String>

    /// The live channels nobody will hear again: their activity ended before `endedBefore`
    /// (time enough for its end to be broadcast, retries included), or started before
    /// `startedBefore` (past iOS's 8 hours plus the 4 hours a dismissal may take), or was
    /// never started and had no event since `idleBefore` (a game abandoned before its start),
    /// or, with no activity stored, the channel was created before `startedBefore`. An
    /// activity that has not started is not aged: a game scheduled a day ahead keeps its
    /// channel. Oldest first.
    func channelsToSweep(endedBefore: Date, startedBefore: Date, idleBefore: Date, limit: Int) async throws -> [BroadcastChannel]

    /// Marks the live channel for (domain, key) deleted, and forgets it as created
    /// (``createdChannelIDs()``): it is gone at APNs.
    ///
    /// - Returns: `false` if there was no live channel.
    func markChannelDeleted(domain: String, key: String, at: Date) async throws -> Bool

    // MARK: Trace

    /// Appends trace entries in one transaction.
    func appendTrace(_ entries: [TraceEntry]) async throws

    /// The newest `limit` entries of an activity's trace, oldest first.
    func trace(activityID: String, limit: Int) async throws -> [TraceEntry]

    /// Deletes what retention lets go (``RetentionCutoffs``), at most `limit` rows of each kind,
    /// each kind in a short transaction of its own that waits on no row another writer holds:
    /// call it again while any kind removed `limit`.
    func prune(_ cutoffs: RetentionCutoffs, limit: Int) async throws -> PruneCounts

    // MARK: Audit

    /// Records one on-call action.
    func appendAudit(_ entry: AuditEntry) async throws

    /// The newest `limit` audit entries at or after `since` (all when nil), oldest first.
    func audit(since: Date?, limit: Int) async throws -> [AuditEntry]

    // MARK: Events taken over HTTPS

    /// Claims each event's id, in order, and says whether to publish it. A claim that finds
    /// its id with the same digest and no confirm yet is answered ``EventClaimOutcome/publish``
    /// again: the earlier attempt failed, or is in flight.
    func claimEvents(_ claims: [EventClaim], now: Date) async throws -> [EventClaimOutcome]

    /// Records that the broker confirmed these events, so a retry publishes nothing new.
    func markEventsPublished(_ eventIDs: [String], now: Date) async throws

    /// Keeps outcomes for `GET /v1/events/{id}`; one already kept (the same outcome reported
    /// again) is not kept twice. Returns the ids of those it had not kept before.
    func recordOutcomes(_ outcomes: [RecordedOutcome]) async throws -> Set<String>

    /// The outcomes kept for an event, oldest first.
    func outcomes(eventID: String, limit: Int) async throws -> [RecordedOutcome]

    // MARK: Erasure

    /// The user's activities that have not ended, to end on the user's devices before
    /// ``forgetUser(_:sharedDomains:)``; load them with ``loadSnapshots(_:whileWriting:)``.
    func liveActivities(ofUser userID: String) async throws -> [SnapshotRequest]

    /// Removes everything that names the user, in one transaction: push-to-start tokens,
    /// the update tokens of the user's activities and the user's subscriptions to shared
    /// ones (device ids `<user>/…`), follows, preferences, late starts, the user's activities
    /// outside `sharedDomains` with their trace lines, and the dead letters of those
    /// activities or whose body names the user or one of the user's tokens. A shared
    /// activity the user followed or owns stays. Idempotent: a second call removes nothing.
    func forgetUser(_ userID: String, sharedDomains: Set<String>) async throws -> UserErasure

    // MARK: Api

    /// Stores a device's update token for an activity the user owns, replacing that
    /// device's previous token.
    ///
    /// If the activity has no row yet (the app often registers before the first event),
    /// a pending row owned by the user is created so that ownership is settled at once.
    func registerUpdateToken(_ registration: UpdateTokenRegistration) async throws -> TokenRegistrationOutcome

    /// Removes a device's update token for an activity the user owns.
    func removeUpdateToken(activityID: String, deviceID: String, userID: String) async throws -> TokenRemovalOutcome

    /// Stores a device's push-to-start token for an attributes type, replacing that device's
    /// previous one. A device new to the user is queued for a late start into each live
    /// shared activity of the type whose start named a topic the user follows.
    func registerPushToStartToken(_ token: PushToStartToken) async throws

    /// The devices on which the user has a push-to-start token, of any type: the devices a
    /// start reaches, which the api bounds per user.
    func pushToStartDevices(userID: String) async throws -> Set<String>

    /// The oldest content-state version declared with a push-to-start token of the type, nil
    /// when none declared one: what a channel carrying the oldest version broadcasts.
    func oldestContentVersion(attributesType: String) async throws -> Int?

    /// The registered tokens counted by type, kind, content-state version and locale, the
    /// type's only when `attributesType` is given; ordered by those.
    func tokenRegistrations(attributesType: String?) async throws -> [TokenRegistrations]

    /// Removes the user's push-to-start token for an attributes type on one device, or on
    /// every device when `deviceID` is nil.
    ///
    /// - Returns: how many were removed.
    func removePushToStartTokens(userID: String, attributesType: String, deviceID: String?) async throws -> Int

    /// Makes the user follow `topic` (a team, a league, a game). Each device of the user is
    /// queued for a late start into each live shared activity whose start named the topic,
    /// unless the user followed another of its topics before that start (the devices were
    /// in its audience then).
    ///
    /// - Returns: `false` if the user already followed it.
    func follow(userID: String, topic: String, at: Date) async throws -> Bool

    /// Stops the user following `topic`.
    ///
    /// - Returns: `false` if the user did not follow it.
    func unfollow(userID: String, topic: String) async throws -> Bool

    /// The topics the user follows, ordered by topic.
    func follows(userID: String) async throws -> [Follow]

    /// The user's preferences, ``UserPreferences/defaults`` if never set.
    func preferences(userID: String) async throws -> UserPreferences

    /// Replaces the user's preferences.
    func setPreferences(_ preferences: UserPreferences, userID: String) async throws

    /// One activity, for reconciliation.
    func activity(id: String) async throws -> ActivityRecord?
}

/// Priority-10 pushes a batch is about to send, each spent only if the change it comes
/// from applied.
public struct BudgetDemands: Sendable {
    public struct Demand: Sendable {
        public var activityID: String
        /// The index of its change in the batch; nil for a push that depends on none.
        public var changeIndex: Int?

        public init(activityID: String, changeIndex: Int?) {
            self.activityID = activityID
            self.changeIndex = changeIndex
        }
    }

    public var demands: [Demand]
    public var at: Date
    public var window: TimeInterval

    public init(_ demands: [Demand], at: Date, window: TimeInterval) {
        self.demands = demands
        self.at = at
        self.window = window
    }

    /// The activity ids to spend for, given the batch's outcomes.
    public func due(after outcomes: [ChangeOutcome]) -> [String] {
        demands.compactMap { demand in
            guard let index = demand.changeIndex, index < outcomes.count else { return demand.activityID }
            return outcomes[index] == .applied ? demand.activityID : nil
        }
    }
}

extension ActivityStore {
    /// The whole audience of `topics`, every page of it: for a caller that knows it is small.
    public func audience(topics: [String], attributesType: String) async throws -> [PushToStartToken] {
        let page = 10_000
        var audience: [PushToStartToken] = []
        while true {
            let next = try await self.audience(
                topics: topics, attributesType: attributesType, of: nil, after: audience.last.map(AudiencePosition.init), limit: page)
            audience += next
            if next.count < page { return audience }
        }
    }

    /// Loads snapshots for a caller that does not know whether the process writes meanwhile.
    public func loadSnapshots(_ requests: [SnapshotRequest]) async throws -> [String: StoredActivity] {
        try await loadSnapshots(requests, whileWriting: true)
    }

    public func applyChanges(_ changes: [ActivityChange], trace: [TraceEntry], spending: BudgetDemands) async throws
        -> (outcomes: [ChangeOutcome], spent: [String: Int])
    {
        let outcomes = changes.isEmpty && trace.isEmpty ? [] : try await applyChanges(changes, trace: trace)
        let due = spending.due(after: outcomes)
        let spent = due.isEmpty ? [:] : try await spendPriorityBudget(due, at: spending.at, window: spending.window)
        return (outcomes, spent)
    }

    /// Applies a batch of state changes without trace entries.
    public func applyChanges(_ changes: [ActivityChange]) async throws -> [ChangeOutcome] {
        try await applyChanges(changes, trace: [])
    }
}
