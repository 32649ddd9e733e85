import Foundation
import LivelineCodecs

// Tests: Tests/LivelineCoreTests/LifecycleTests.swift, Tests/LivelineCoreTests/TargetingTests.swift, Tests/LivelineCoreTests/GoldenPayloadTests.swift

extension Translator {
    /// Decides what to send for one event.
    ///
    /// - Parameters:
    ///   - event: the parsed event.
    ///   - activity: the stored activity, or nil when this is its first event.
    ///   - tokens: the activity's update tokens, the user's push-to-start token for
    ///     the domain's attributes type, and the channel id.
    ///   - preferences: the user's Live Activity authorization.
    ///   - budget: the activity's priority-10 usage in the current window.
    ///   - now: the current time (budget window, 8-hour lifetime).
    public func translate(
        event: DomainEvent, activity: ActivitySnapshot?, tokens: TokenSnapshot,
        preferences: UserPreferences, budget: BudgetUsage, now: Date
    ) -> TranslationDecision {
        var notes: [String] = []
        guard let domain = domains[event.domain] else {
            return .deadLetter(.init(reason: .invalidEvent, message: EventError.unknownDomain(event.domain).message, traceNotes: notes))
        }
        let configuration = domain.configuration
        let nowTime = EventTime(now)
        if let activity, activity.domain != event.domain || (!configuration.shared && activity.userId != event.userId) {
            let message = "activity \(activity.id) belongs to domain \(activity.domain) and user \(activity.userId), "
                + "not \(event.domain) and \(event.userId)"
            return .deadLetter(.init(reason: .invalidEvent, message: message, traceNotes: notes))
        }
        if let (reason, message) = LifecycleGuard.orderingDrop(event: event, activity: activity) {
            return .drop(.init(reason: reason, message: message, newSnapshot: nil, traceNotes: notes))
        }

        let statusPolicy = configuration.policy.policy(for: event.status)
        var snapshot = Self.applying(event, to: activity, attributesType: configuration.attributesType, isTerminal: statusPolicy.isTerminal)
        // The clock runs from the first push that started the activity on a device; before
        // it, events are stored (the app can read them) and nothing ages.
        if let startedAt = snapshot.startedAt, LifecycleGuard.isPastLifetime(startedAt: startedAt, event: event, now: nowTime) {
            snapshot.endedAt = startedAt.adding(seconds: LifecycleGuard.lifetimeSeconds)
            snapshot.endReason = "lifetime"
            let message = "activity started at \(startedAt); iOS ended it after 8 hours, so nothing more is sent"
            return .drop(.init(reason: .pastLifetime, message: message, newSnapshot: snapshot, traceNotes: notes))
        }

        if configuration.shared, event.topics != nil, activity?.pushToStartSentAt == nil, snapshot.attributes == nil {
            let message = "a start names topics but activity \(event.activityId) has no attributes: send them with the start"
            return .deadLetter(.init(reason: .invalidEvent, message: message, traceNotes: notes))
        }

        let route: Route
        switch Self.route(event: event, isTerminal: statusPolicy.isTerminal, previous: activity, snapshot: snapshot,
                          tokens: tokens, preferences: preferences, configuration: configuration, notes: &notes) {
        case .success(let found): route = found
        case .failure(let drop):
            return .drop(.init(reason: drop.reason, message: drop.message, newSnapshot: snapshot, traceNotes: notes))
        }

        var style = PushStyle.choose(for: route.event, event: event, previous: activity, policy: configuration.policy)
        notes.append(style.note)
        if let overrides = event.overrides {
            if let violation = configuration.policy.overrides.violation(
                of: overrides, eventTime: event.time, isEnd: route.event == .end, broadcast: configuration.delivery == .channel
            ) {
                return .deadLetter(.init(reason: .invalidOverride, message: violation, traceNotes: notes))
            }
            // The producer sent the alert with the state: a placeholder it fills from neither is a
            // mistake, where a configured alert's (checked against the model at start) is a gap.
            if let alert = overrides.alert, let name = AlertRendering(
                message: event.message, contentState: event.contentState, attributes: snapshot.attributes
            ).unresolved(in: alert).first {
                let message = "data.overrides.alert names {\(name)}, which the event's content-state, attributes and message "
                    + "do not have: name a field, or give a fallback as {\(name)|…}"
                return .deadLetter(.init(reason: .invalidOverride, message: message, traceNotes: notes))
            }
            style.apply(overrides, eventTime: event.time)
            notes.append("producer overrides applied")
        }
        if let cap = event.priorityCap, style.priority > cap {
            style.priority = cap
            style.alert = nil
            notes.append("replayed with priority capped at \(cap.rawValue): no alert, no budget spent")
        }
        let demanded = style.priority
        let newBudget: BudgetUsage
        switch Self.spendBudget(budget, style: &style, pushEvent: route.event, event: event,
                                configuration: configuration, preferences: preferences, now: nowTime, notes: &notes) {
        case .success(let usage): newBudget = usage
        case .failure(let rejection): return .deadLetter(rejection)
        }

        // One payload per variant: a shared start differs only in `input-push-channel`, an
        // alert with a text per language in the language of each device, and the state in the
        // content-state version each device's app decodes.
        let variants = Self.variants(route.targets, channel: route.inputPushChannel, alert: style.alert, tokens: tokens, configuration: configuration)
            + Self.variants(route.withoutChannel, channel: nil, alert: style.alert, tokens: tokens, configuration: configuration)
        let languages = Set(variants.map { $0.language ?? "its own text" })
        if languages.count > 1, style.alert?.form == .perLanguage {
            notes.append("alert in \(languages.sorted().joined(separator: ", "))")
        }
        var incompatible = 0
        var jobsByVersion: [Int: Int] = [:]
        var fields: APSFields?
        var jobs: [PushJob] = []
        for variant in variants {
            var contentState: Data? = nil
            if let version = variant.version {
                switch configuration.contentStates.state(event.contentState, for: version) {
                case .success(let state): contentState = JSONValue.encoded(state)
                case .failure(let reason):
                    let targets = variant.targets
                    incompatible += targets.count
                    notes.append("incompatible-version: not sent to \(targets.count == 1 ? targets[0].logDescription : "\(targets.count) devices"): \(reason.message)")
                    continue
                case nil: break
                }
            }
            let built: (APSFields, Data)
            switch Self.payload(for: event, route: route, inputPushChannel: variant.channel, language: variant.language,
                                contentState: contentState, style: style,
                                previous: activity, snapshot: snapshot, statusPolicy: statusPolicy,
                                dismissalDate: event.overrides?.dismissalDate, notes: &notes) {
            case .success(let success): built = success
            case .failure(let rejection): return .deadLetter(rejection)
            }
            fields = built.0
            jobsByVersion[variant.version ?? configuration.contentStates.current, default: 0] += variant.targets.count
            jobs += variant.targets.map { target in
                let jobId = JobIdentity.jobId(eventId: event.id, target: target)
                return PushJob(
                    jobId: jobId, apnsId: JobIdentity.apnsId(jobId: jobId), activityId: event.activityId,
                    domain: event.domain, eventId: event.id, eventTime: event.time, userId: event.userId,
                    attributesType: snapshot.attributesType, target: target, bundleId: event.app,
                    priority: style.priority, expiration: Self.expiration(of: target, staleDate: built.0.staleDate, configuration: configuration),
                    event: route.event, payload: built.1, isTerminal: route.event == .end, sequence: event.time.millisecondsSince1970,
                    alerts: built.0.alert != nil
                )
            }
        }
        if fields == nil, incompatible > 0 {
            return .drop(.init(reason: .incompatibleVersion, message: "no device's app decodes this content-state",
                               newSnapshot: snapshot, traceNotes: notes))
        }
        guard let fields else {
            return .drop(.init(reason: .noTarget, message: "no target", newSnapshot: snapshot, traceNotes: notes))
        }

        snapshot.lastPushTimestamp = fields.timestamp
        if route.event == .start { snapshot.pushToStartSentAt = event.time }
        // This push starts the activity on a device (a start, or the first update to a
        // token the app registered): iOS's 8 hours count from here. The event's time, not
        // the clock's, so a redelivery decides the same. A broadcast before a game's start
        // (its announcement) reaches no activity yet, so it starts nothing.
        let reachesADevice = route.targets.contains { if case .device = $0 { true } else { false } }
        if snapshot.startedAt == nil, route.event == .start || reachesADevice {
            snapshot.startedAt = event.time
        }
        let described = jobs.count > 8
            ? "\(jobs.count) devices"
            : jobs.map(\.target.logDescription).joined(separator: ", ")
        notes.append("\(jobs.count) job(s) at priority \(style.priority.rawValue): \(described)")
        return .send(.init(
            jobs: jobs, newSnapshot: snapshot, newBudget: newBudget,
            traceNotes: notes,
            downgraded: style.priority < demanded,
            alertForm: fields.alert == nil ? nil : style.alert?.form,
            jobsByVersion: jobsByVersion, incompatible: incompatible
        ))
    }

    /// Targets that get the same payload.
    struct Variant {
        var targets: [PushTarget]
        var channel: String?
        /// The alert's language, for an alert with a text per language.
        var language: String?
        /// The content-state version, when older than the current one.
        var version: Int?
    }

    /// `targets` in groups that get the same payload: one group, unless the alert has a text
    /// per language or devices decode older content-states, when each device gets its locale's
    /// text and its version's state. A broadcast is given no language, and a version only when
    /// its channel carries the oldest registered.
    static func variants(
        _ targets: [PushTarget], channel: String?, alert: AlertTemplate?, tokens: TokenSnapshot, configuration: DomainConfiguration
    ) -> [Variant] {
        guard !targets.isEmpty else { return [] }
        let translated = alert.map { !$0.translations.isEmpty } ?? false
        let current = configuration.contentStates.current
        func older(_ version: Int?) -> Int? { version.flatMap { $0 < current ? $0 : nil } }
        if !translated, tokens.contentVersions.isEmpty, tokens.channelContentVersion == nil {
            return [Variant(targets: targets, channel: channel)]
        }
        struct Key: Hashable { var language: String?; var version: Int? }
        var groups: [Key: [PushTarget]] = [:]
        var order: [Key] = []
        for target in targets {
            let key: Key
            switch target {
            case .device(let token, _, _):
                key = Key(
                    language: translated ? alert?.language(forLocale: tokens.locales[token], fallbackLanguage: configuration.policy.fallbackLanguage) : nil,
                    version: older(tokens.contentVersions[token]))
            case .channel:
                key = Key(language: nil, version: older(tokens.channelContentVersion))
            }
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(target)
        }
        return order.map { Variant(targets: groups[$0] ?? [], channel: channel, language: $0.language, version: $0.version) }
    }

    /// `apns-expiration`: the stale date for a device (nil: store until delivered). A
    /// broadcast's agrees with its channel's storage: 0 on a channel that stores nothing,
    /// otherwise the stale date (0 without one).
    static func expiration(of target: PushTarget, staleDate: Int64?, configuration: DomainConfiguration) -> Int64? {
        guard case .channel = target else { return staleDate }
        return configuration.channel.storesLatestMessage ? staleDate ?? 0 : 0
    }

    /// The activity with the event applied.
    static func applying(_ event: DomainEvent, to activity: ActivitySnapshot?, attributesType: String, isTerminal: Bool) -> ActivitySnapshot {
        var snapshot = activity ?? ActivitySnapshot(
            id: event.activityId, domain: event.domain, attributesType: attributesType, userId: event.userId
        )
        if let attributes = event.attributes { snapshot.attributes = attributes }
        snapshot.lastContentState = event.contentState
        snapshot.lastStatus = event.status
        snapshot.lastEventId = event.id
        snapshot.lastEventTime = event.time
        if isTerminal {
            snapshot.endedAt = event.time
            snapshot.endReason = event.status
        }
        return snapshot
    }
}
