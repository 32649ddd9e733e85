import Foundation
import LivelineCodecs
import LivelineCore
import LivelineModels
import LivelineStore

// Tests: Tests/LivelineServicesTests/TranslatorServiceTests.swift, Tests/LivelineServicesTests/BatchPlanCarryOverTests.swift

/// One activity as the translator carries it through a batch: the core's view of the
/// stored row, tokens, preferences and budget. Each decision replaces it, so a second
/// event for the same activity in one batch sees the first one's result.
struct ActivityState: Sendable {
    var snapshot: ActivitySnapshot?
    var tokens: TokenSnapshot
    var preferences: UserPreferences
    var budget: BudgetUsage

    /// The state of an activity the store knows nothing about.
    static let unknown = ActivityState(
        snapshot: nil, tokens: TokenSnapshot(), preferences: .defaults, budget: .empty)
}

extension ActivityState {
    /// Maps the store's snapshot onto the core's types.
    ///
    /// A pending row (an app registered a token before the first event) is no snapshot at
    /// all: no event was applied yet. Rows written before the store kept the last status
    /// and push timestamp (schema version 1) get them derived: the status from the stored
    /// content-state (typed domains), the timestamp from the last event's second.
    init(stored: StoredActivity, kind: DomainKind?) {
        let record = stored.activity
        let starts = stored.pushToStartTokens
        let sandbox = Set(
            stored.updateTokens.filter { $0.environment == .sandbox }.map { DeviceToken.lowercased($0.token) }
                + starts.filter { $0.environment == .sandbox }.map { DeviceToken.lowercased($0.token) })
        var locales: [String: String] = [:]
        var versions: [String: Int] = [:]
        for (token, locale, version) in stored.updateTokens.map({ ($0.token, $0.locale, $0.contentVersion) })
            + starts.map({ ($0.token, $0.locale, $0.contentVersion) }) {
            if let locale { locales[DeviceToken.lowercased(token)] = locale }
            if let version { versions[DeviceToken.lowercased(token)] = version }
        }
        self.init(
            snapshot: record.flatMap { Self.snapshot(of: $0, kind: kind) },
            tokens: TokenSnapshot(
                updateTokens: stored.updateTokens.map(\.token), pushToStartTokens: starts.map(\.token),
                sandboxTokens: sandbox, locales: locales, contentVersions: versions),
            preferences: stored.preferences,
            budget: BudgetUsage(
                priority10Count: record?.budget.spent ?? 0,
                windowStart: record?.budget.windowStart.map(EventTime.init))
        )
    }

    /// The core's view of a stored row; nil for a pending row.
    static func snapshot(of record: ActivityRecord, kind: DomainKind?) -> ActivitySnapshot? {
        guard let lastEventAt = record.lastEventAt else { return nil }
        let contentState = record.contentState.flatMap(Self.json)
        return ActivitySnapshot(
            id: record.id, domain: record.domain, attributesType: record.attributesType, userId: record.userID,
            attributes: record.attributes.flatMap(Self.json),
            lastContentState: contentState,
            lastStatus: record.lastStatus ?? kind.flatMap { Self.status(in: contentState, kind: $0) },
            lastEventId: record.lastEventID,
            lastEventTime: EventTime(lastEventAt),
            lastPushTimestamp: record.lastPushTimestamp ?? EventTime(lastEventAt).unixSeconds,
            startedAt: record.startedAt.map(EventTime.init),
            pushToStartSentAt: record.pushToStartSentAt.map(EventTime.init),
            endedAt: record.endedAt.map(EventTime.init),
            endReason: record.endReason
        )
    }

    private static func json(_ text: String) -> JSONValue? {
        try? JSONValue.parse(text)
    }

    /// The content-state key that holds the status of a typed domain (DomainKind's docs).
    private static func status(in contentState: JSONValue?, kind: DomainKind) -> String? {
        switch kind {
        case .ride, .score: contentState?["status"]?.stringValue
        case .delivery: contentState?["currentStep"]?.stringValue
        case .generic: nil
        }
    }
}
