// Tests: Tests/LivelineCoreTests/TargetingTests.swift

/// Where the pushes of one event go and which ActivityKit event they carry.
struct Route: Hashable, Sendable {
    var targets: [PushTarget]
    var event: PushEvent
    /// A shared activity's start: the channel the started activities listen on. Only
    /// `targets` get it; `withoutChannel` are devices too old for channels.
    var inputPushChannel: String? = nil
    /// Start targets that get the start without `input-push-channel` (and are updated per token).
    var withoutChannel: [PushTarget] = []
}

/// Why an event has nowhere to go.
struct RouteDrop: Error, Hashable, Sendable {
    var reason: DropReason
    var message: String
}

extension Translator {
    /// Picks the targets: the activity's broadcast channel for channel domains (the
    /// sender opens it at APNs on first use); otherwise every valid
    /// update token; otherwise a push-to-start when allowed; otherwise nothing.
    static func route(
        event: DomainEvent, isTerminal: Bool, previous: ActivitySnapshot?, snapshot: ActivitySnapshot,
        tokens: TokenSnapshot, preferences: UserPreferences, configuration: DomainConfiguration, notes: inout [String]
    ) -> Result<Route, RouteDrop> {
        let updateOrEnd: PushEvent = isTerminal ? .end : .update
        if configuration.shared {
            return sharedRoute(event: event, isTerminal: isTerminal, previous: previous, tokens: tokens,
                               configuration: configuration, notes: &notes)
        }
        if configuration.delivery == .channel {
            // Broadcast reaches every subscriber; one user's preferences do not apply.
            return .success(Route(targets: [.channel(key: event.activityId)], event: updateOrEnd))
        }
        guard preferences.activitiesEnabled else {
            return .failure(RouteDrop(reason: .activitiesDisabled, message: "user \(event.userId) has Live Activities turned off"))
        }

        var valid: [String] = []
        for token in Set(tokens.updateTokens.map(DeviceToken.lowercased)).sorted() {
            if DeviceToken.isValid(token) { valid.append(token) } else { notes.append("skipped malformed update token \(token.prefix(8))…") }
        }
        if !valid.isEmpty {
            let targets = valid.map { PushTarget.device(token: $0, kind: .update, environment: tokens.environment(of: $0)) }
            return .success(Route(targets: targets, event: updateOrEnd))
        }

        let noTarget = { (why: String) in Result<Route, RouteDrop>.failure(RouteDrop(reason: .noTarget, message: why)) }
        if isTerminal {
            return noTarget("no update token; an activity is not started only to end it")
        }
        if previous?.pushToStartSentAt != nil {
            // A second start would create a second activity on the device.
            return noTarget("push-to-start already sent; waiting for the new activity's update token")
        }
        let startTokens = validTokens(tokens.pushToStartTokens, kind: "push-to-start", notes: &notes)
        guard !startTokens.isEmpty else {
            return noTarget("no update token and no push-to-start token for \(configuration.attributesType)")
        }
        guard configuration.policy.pushToStartAlert != nil else {
            return noTarget("push-to-start is disabled for domain \(configuration.name) (no pushToStartAlert)")
        }
        guard snapshot.attributes != nil else {
            return noTarget("push-to-start needs attributes and none were ever sent for activity \(event.activityId)")
        }
        // Every device of the user: the activity runs where the user looks.
        let targets = startTokens.map { PushTarget.device(token: $0, kind: .pushToStart, environment: tokens.environment(of: $0)) }
        return .success(Route(targets: targets, event: .start))
    }

    /// A shared activity (a game): its start goes by push-to-start to every follower's
    /// device, the others by broadcast on its channel, plus per token to the devices that
    /// subscribed an update token (those too old for channels, or a token-delivery domain).
    static func sharedRoute(
        event: DomainEvent, isTerminal: Bool, previous: ActivitySnapshot?, tokens: TokenSnapshot,
        configuration: DomainConfiguration, notes: inout [String]
    ) -> Result<Route, RouteDrop> {
        let noTarget = { (why: String) in Result<Route, RouteDrop>.failure(RouteDrop(reason: .noTarget, message: why)) }
        let subscribed = validTokens(tokens.updateTokens, kind: "update", notes: &notes)
            .map { PushTarget.device(token: $0, kind: .update, environment: tokens.environment(of: $0)) }

        if let topics = event.topics, previous?.pushToStartSentAt == nil, !isTerminal {
            let audience = validTokens(tokens.audience, kind: "push-to-start", notes: &notes)
            guard !audience.isEmpty else {
                return noTarget("no device of a follower of \(topics.joined(separator: ", ")) has a push-to-start token")
            }
            let channel = configuration.delivery == .channel ? tokens.channelID : nil
            if configuration.delivery == .channel, channel == nil {
                notes.append("no channel yet: every device is started to report its update token instead")
            }
            var onChannel: [PushTarget] = []
            var withoutChannel: [PushTarget] = []
            for token in audience {
                let target = PushTarget.device(token: token, kind: .pushToStart, environment: tokens.environment(of: token))
                // A device hears the channel only on iOS 18 and later, only in the channel's APNs
                // environment, and (unless the channel carries the oldest version) only with an
                // app that decodes the current content-state; any other is started and updated per token.
                if channel != nil, configuration.channel.reaches(osVersion: tokens.osVersions[token]),
                    tokens.environment(of: token) == tokens.channelEnvironment,
                    configuration.channel.olderContentStates == .oldest
                        || tokens.contentVersions[token].map({ $0 >= configuration.contentStates.current }) ?? true {
                    onChannel.append(target)
                } else {
                    withoutChannel.append(target)
                }
            }
            notes.append("start for the followers of \(topics.joined(separator: ", ")): \(onChannel.count) device(s) on the channel, "
                + "\(withoutChannel.count) per token")
            return .success(Route(
                targets: onChannel, event: .start, inputPushChannel: channel,
                withoutChannel: withoutChannel))
        }
        if event.topics != nil, previous?.pushToStartSentAt != nil {
            notes.append("topics ignored: the followers were started already")
        }
        let pushEvent: PushEvent = isTerminal ? .end : .update
        if configuration.delivery == .channel {
            // The channel exists from the activity's first event; the sender resolves it.
            return .success(Route(targets: [.channel(key: event.activityId)] + subscribed, event: pushEvent))
        }
        guard !subscribed.isEmpty else { return noTarget("no device subscribed to this shared activity") }
        return .success(Route(targets: subscribed, event: pushEvent))
    }

    /// The valid tokens among `tokens`, lower-cased and deduplicated in order; each malformed one noted.
    static func validTokens(_ tokens: [String], kind: String, notes: inout [String]) -> [String] {
        var seen: Set<String> = []
        var valid: [String] = []
        for token in tokens {
            let token = DeviceToken.lowercased(token)
            guard DeviceToken.isValid(token) else {
                notes.append("skipped malformed \(kind) token \(token.prefix(8))…")
                continue
            }
            if seen.insert(token).inserted { valid.append(token) }
        }
        return valid
    }
}
