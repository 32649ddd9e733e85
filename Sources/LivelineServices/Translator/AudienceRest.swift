import Foundation
import LivelineCore
import LivelineStore

// Tests: Tests/LivelineServicesTests/GamePipelineTests.swift

/// The part of a shared start's audience beyond the page read with its batch, and what its
/// start was translated with. A game's start reaches every follower, and a million of them
/// held at once (their tokens, their jobs) would take the translator past any memory limit;
/// read a page at a time once the start is stored, the translator holds one page whatever
/// the audience (``TranslatorSettings/audiencePage``).
///
/// Each page is the same event translated on the same state as the first page, so its jobs
/// are the ones a single read would have made: the same ids, payloads and priority.
struct AudienceRest: Sendable {
    var event: DomainEvent
    var topics: [String]
    var attributesType: String
    /// Where the next page starts.
    var after: AudiencePosition
    /// The activity as the start was translated on (before it).
    var activity: ActivitySnapshot?
    /// The channel, without any device.
    var tokens: TokenSnapshot
    var preferences: UserPreferences
    var budget: BudgetUsage
    var now: Date
    /// The start's event was redelivered: its jobs are copies (``BatchProcessor/PreparedBatch/copies``).
    var copy: Bool
    /// What the last page's starts carry.
    var pageCounts = JobCounts()
    /// Devices started from the pages read so far.
    var started = 0
    var pages = 0
    /// The last page read was not full: there is no more.
    var exhausted = false
}

extension BatchProcessor {
    /// The starts for the next page of `rest`'s audience, or nil when it has no more; `rest`
    /// moves past the page. Only push-to-start jobs are kept: whatever else the start sends
    /// (a broadcast) went with the first page.
    func nextAudiencePage(_ rest: inout AudienceRest) async throws -> [PushJob]? {
        guard !rest.exhausted else { return nil }
        let page = try await store.audience(
            topics: rest.topics, attributesType: rest.attributesType, of: rest.event.activityId, after: rest.after, limit: settings.audiencePage)
        guard let last = page.last else { return nil }
        rest.after = AudiencePosition(after: last)
        rest.pages += 1
        rest.exhausted = page.count < settings.audiencePage
        var tokens = rest.tokens
        tokens.start(page)
        let decision = translator.translate(
            event: rest.event, activity: rest.activity, tokens: tokens, preferences: rest.preferences, budget: rest.budget,
            now: rest.now)
        guard case .send(let send) = decision else { return [] }
        let starts = send.jobs.filter {
            if case .device(_, .pushToStart, _) = $0.target { true } else { false }
        }
        rest.started += starts.count
        // A start's jobs are all push-to-start (its broadcast, if any, went with the first page).
        rest.pageCounts = JobCounts([send])
        return starts
    }
}

extension TokenSnapshot {
    /// Makes `devices` the audience a start goes to, with each one's APNs environment, iOS
    /// version, locale and content-state version.
    mutating func start(_ devices: [PushToStartToken]) {
        audience = devices.map(\.token)
        for device in devices {
            let token = DeviceToken.lowercased(device.token)
            if device.environment == .sandbox { sandboxTokens.insert(token) }
            if let osVersion = device.osVersion { osVersions[token] = osVersion }
            if let locale = device.locale { locales[token] = locale }
            if let version = device.contentVersion { contentVersions[token] = version }
        }
    }
}
