import Foundation
import LivelineCodecs
import LivelineCore
import LivelineModels
import LivelineStore

// Tests: Tests/LivelineServicesTests/BatchPlanCarryOverTests.swift, Tests/LivelineServicesTests/TranslatorServiceTests.swift

/// The decisions for one batch, before any write: pure apart from the clock value it
/// is given, so a batch can be planned again and tested without I/O.
///
/// Events are translated in order, and each decision's snapshot, budget and consumed
/// push-to-start token are carried to later events of the same activity or user, and
/// (``CarryOver``) to the next batch, which is planned while this one is being stored.
struct BatchPlan: Sendable {
    /// One translated event.
    struct Entry {
        var event: DomainEvent
        var body: Data
        var decision: TranslationDecision
        /// The budget before this event; a changed budget means a priority-10 demand.
        var budgetBefore: BudgetUsage
        /// Index into ``changes`` when the decision stores state.
        var changeIndex: Int?
        /// The broker delivered its message before: an earlier attempt may have stored it
        /// and died before publishing.
        var redelivered = false
        /// A shared start whose audience is more than the page read with the batch: the rest
        /// is read and started once the start is stored.
        var audienceRest: AudienceRest?
    }

    private(set) var entries: [Entry] = []
    private(set) var changes: [ActivityChange] = []
    private(set) var trace: [TraceEntry] = []

    private let translator: Translator
    private let now: Date
    private var states: [String: ActivityState]

    /// What the next batch must know of this one's decisions when it loads before this
    /// batch's transaction is committed (or visible to its connection).
    struct CarryOver: Sendable {
        fileprivate var states: [String: ActivityState]
    }

    var carryOver: CarryOver { CarryOver(states: states) }

    /// Shared activities' channels and start audiences, by activity id.
    struct SharedTargets: Sendable {
        var channels: [String: String] = [:]
        /// The APNs environment of each of those channels.
        var channelEnvironments: [String: APNsEnvironment] = [:]
        /// The content-state version each of those channels carries, where older than current.
        var channelVersions: [String: Int] = [:]
        var audiences: [String: [PushToStartToken]] = [:]
        /// When each audience was read: who follows from then on is started late.
        var audienceReadAt: [String: Date] = [:]
        /// Where the first page of an audience ended, when it was full: there may be more.
        var audienceRest: [String: AudiencePosition] = [:]
    }
    private let shared: SharedTargets

    /// - Parameter previous: the decisions of the batch before, when its changes may be
    ///   missing from `stored`.
    init(
        translator: Translator, stored: [String: StoredActivity], now: Date, after previous: CarryOver? = nil,
        shared: SharedTargets = SharedTargets()
    ) {
        self.translator = translator
        self.now = now
        self.shared = shared
        var states: [String: ActivityState] = [:]
        states.reserveCapacity(stored.count)
        entries.reserveCapacity(stored.count)
        for (activityId, snapshot) in stored {
            let kind = snapshot.activity.flatMap { translator.kind(ofDomain: $0.domain) }
            var state = ActivityState(stored: snapshot, kind: kind)
            if let carried = previous?.states[activityId], Self.carries(carried.snapshot, over: state.snapshot) {
                // Tokens and preferences stay as loaded (the api may have changed them); the
                // budget is the previous batch's, whose spending may not be stored yet.
                state.snapshot = carried.snapshot
                state.budget = carried.budget
            }
            states[activityId] = state
        }
        self.states = states
    }

    /// Whether the previous batch's decided snapshot is at least as new as the loaded one.
    /// The loaded row wins when another worker stored a newer event or an end meanwhile:
    /// the store's conditional writes then refuse what the previous batch decided.
    private static func carries(_ carried: ActivitySnapshot?, over loaded: ActivitySnapshot?) -> Bool {
        guard let carried else { return false }
        guard let loaded, let loadedTime = loaded.lastEventTime else { return true }
        if loaded.endedAt != nil && carried.endedAt == nil { return false }
        return carried.lastEventTime.map { $0 >= loadedTime } ?? false
    }

    /// The store requests for a batch: one per activity (the store keys snapshots by id).
    static func requests(for events: [DomainEvent], translator: Translator) -> [SnapshotRequest] {
        var seen: Set<String> = []
        var requests: [SnapshotRequest] = []
        for event in events where seen.insert(event.activityId).inserted {
            let attributesType = translator.attributesType(ofDomain: event.domain) ?? ""
            requests.append(SnapshotRequest(activityID: event.activityId, userID: event.userId, attributesType: attributesType))
        }
        return requests
    }

    /// Whether `event` would be noticed after what the plan holds for its activity so far
    /// (``Translator/isNoticeable(_:after:)``): a coalescing candidate that would is
    /// translated after all.
    func isNoticeable(_ event: DomainEvent) -> Bool {
        translator.isNoticeable(event, after: states[event.activityId]?.snapshot)
    }

    /// Translates one event and records what to store and trace.
    mutating func translate(_ event: DomainEvent, body: Data, redelivered: Bool) {
        var state = states[event.activityId] ?? .unknown
        if let channel = shared.channels[event.activityId] { state.tokens.channelID = channel }
        if let environment = shared.channelEnvironments[event.activityId] { state.tokens.channelEnvironment = environment }
        if let version = shared.channelVersions[event.activityId] { state.tokens.channelContentVersion = version }
        if let audience = shared.audiences[event.activityId] { state.tokens.start(audience) }

        let replay = redelivered ? Self.rewound(state.snapshot, for: event) : nil
        let decision = translator.translate(
            event: event, activity: replay ?? state.snapshot, tokens: state.tokens,
            preferences: state.preferences, budget: state.budget, now: now)
        // The rest of the audience gets this very start: the same event, translated on the same
        // state, for each page's devices.
        let audienceRest = shared.audienceRest[event.activityId].flatMap { after -> AudienceRest? in
            guard let topics = event.topics, case .send(let send) = decision, send.newSnapshot.pushToStartSentAt == event.time
            else { return nil }
            return AudienceRest(
                event: event, topics: topics, attributesType: translator.attributesType(ofDomain: event.domain) ?? "",
                after: after, activity: replay ?? state.snapshot,
                tokens: TokenSnapshot(channelID: state.tokens.channelID, channelEnvironment: state.tokens.channelEnvironment),
                preferences: state.preferences, budget: state.budget, now: now, copy: redelivered)
        }
        // The decision moves into the entry, which moves into the plan; both are read in place
        // after, since a copy of either is a retain for each of their many fields.
        var entry = Entry(
            event: event, body: body, decision: decision, budgetBefore: state.budget, redelivered: redelivered,
            audienceRest: audienceRest)
        if replay != nil {
            // Stored by the earlier attempt already: publish again, store and spend nothing.
            if case .send(let send) = entry.decision { entry.budgetBefore = send.newBudget }
            entries.append(consume entry)
            trace.append(TraceEntry(activityID: event.activityId, at: now, kind: .pushDecided,
                                    detail: "event \(event.id): redelivered after its state was stored; jobs published again"))
            return
        }

        let newSnapshot: ActivitySnapshot?
        let kind: TraceEntry.Kind
        let notes: [String]
        switch entry.decision {
        case .send(let send):
            newSnapshot = send.newSnapshot
            state.budget = send.newBudget
            kind = .pushDecided
            notes = send.traceNotes
        case .drop(let drop):
            newSnapshot = drop.newSnapshot
            kind = .dropped
            notes = drop.traceNotes + ["\(drop.reason.rawValue): \(drop.message)"]
        case .deadLetter(let rejection):
            newSnapshot = nil
            kind = .deadLettered
            notes = rejection.traceNotes + ["\(rejection.reason.rawValue): \(rejection.message)"]
        }
        if let newSnapshot {
            state.snapshot = newSnapshot
            entry.changeIndex = changes.count
            changes.append(Self.change(for: event, snapshot: newSnapshot, sharedStart: sharedStart(event, newSnapshot)))
        }
        states[event.activityId] = state
        entries.append(consume entry)
        // Notes name tokens only by prefix (PushTarget.logDescription), never in full. The line
        // is built in one string: interpolating and joining it made a string per piece.
        var detail = "event "
        detail.reserveCapacity(64 + event.id.utf8.count + event.status.utf8.count + notes.reduce(0) { $0 + $1.utf8.count + 2 })
        detail += event.id
        detail += " at "
        detail += RFC3339.format(event.time)
        detail += " ("
        detail += event.status
        detail += "): "
        for (index, note) in notes.enumerated() {
            if index > 0 { detail += "; " }
            detail += note
        }
        trace.append(TraceEntry(activityID: event.activityId, at: now, kind: kind, detail: detail))
    }

    /// The state before `event` when the stored state is exactly `event` itself: an earlier
    /// attempt stored it and then failed to publish (the batch was requeued after its
    /// transaction). Without this, the redelivery would be dropped as stale and its jobs lost.
    ///
    /// The store keeps only the latest state, so the rewound snapshot forgets the previous
    /// status, content-state and push timestamp: the job id and content-state are the same,
    /// though the alert is chosen as for a first event. If the earlier publish did reach the
    /// broker, the sender sees the same message id.
    static func rewound(_ snapshot: ActivitySnapshot?, for event: DomainEvent) -> ActivitySnapshot? {
        // Rows from schema version 1 have no event id: the time and state must do.
        guard var snapshot, snapshot.lastEventId == nil || snapshot.lastEventId == event.id,
            snapshot.lastEventTime == event.time, snapshot.lastContentState == event.contentState
        else {
            return nil
        }
        snapshot.lastEventTime = nil
        snapshot.lastEventId = nil
        snapshot.lastStatus = nil
        snapshot.lastContentState = nil
        snapshot.lastPushTimestamp = nil
        if snapshot.pushToStartSentAt == event.time { snapshot.pushToStartSentAt = nil }
        if snapshot.endedAt == event.time {
            snapshot.endedAt = nil
            snapshot.endReason = nil
        }
        return snapshot
    }

    /// The store change for a decision that applied the event.
    static func change(
        for event: DomainEvent, snapshot: ActivitySnapshot, sharedStart: ActivityChange.SharedStart? = nil
    ) -> ActivityChange {
        ActivityChange(
            activityID: event.activityId, domain: event.domain, attributesType: snapshot.attributesType,
            userID: event.userId,
            attributes: event.attributes.map(Self.text),
            contentState: String(decoding: event.contentStateJSON, as: UTF8.self),
            eventTime: event.time.date,
            end: snapshot.endedAt.map { ActivityChange.End(at: $0.date, reason: snapshot.endReason ?? "ended") },
            eventID: event.id, status: event.status, pushTimestamp: snapshot.lastPushTimestamp,
            pushToStartSentAt: snapshot.pushToStartSentAt?.date, startedAt: snapshot.startedAt?.date,
            sharedStart: sharedStart
        )
    }

    /// The topics and audience of a shared start this event sent.
    private func sharedStart(_ event: DomainEvent, _ snapshot: ActivitySnapshot) -> ActivityChange.SharedStart? {
        guard let topics = event.topics, snapshot.pushToStartSentAt == event.time,
            let readAt = shared.audienceReadAt[event.activityId]
        else { return nil }
        return ActivityChange.SharedStart(topics: topics, audienceReadAt: readAt)
    }

    /// Canonical JSON text: the content-state exactly as it went into the payload.
    private static func text(_ value: JSONValue) -> String {
        String(decoding: JSONValue.encoded(value), as: UTF8.self)
    }
}
