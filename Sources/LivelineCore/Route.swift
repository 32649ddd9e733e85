/// Where the pushes of one event go and which ActivityKit event they carry.
struct Route: Hashable, Sendable {
    var targets: [PushTarget]
    var event: PushEvent
    var consumedPushToStart: [String] = []
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
        if configuration.delivery == .channel {
            // Broadcast reaches every subscriber; one user's preferences do not apply.
            return .success(Route(targets: [.channel(key: event.activityId)], event: updateOrEnd))
        }
        guard preferences.activitiesEnabled else {
            return .failure(RouteDrop(reason: .activitiesDisabled, message: "user \(event.userId) has Live Activities turned off"))
        }

        var valid: [String] = []
        for token in Set(tokens.updateTokens.map { $0.lowercased() }).sorted() {
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
        var startTokens: [String] = []
        for token in tokens.pushToStartTokens {
            let token = token.lowercased()
            if DeviceToken.isValid(token) { startTokens.append(token) } else { notes.append("skipped malformed push-to-start token \(token.prefix(8))…") }
        }
        guard !startTokens.isEmpty else {
            return noTarget("no update token and no usable push-to-start token for \(configuration.attributesType)")
        }
        guard configuration.policy.pushToStartAlert != nil else {
            return noTarget("push-to-start is disabled for domain \(configuration.name) (no pushToStartAlert)")
        }
        guard snapshot.attributes != nil else {
            return noTarget("push-to-start needs attributes and none were ever sent for activity \(event.activityId)")
        }
        // Every device of the user: the activity runs where the user looks.
        let targets = startTokens.map { PushTarget.device(token: $0, kind: .pushToStart, environment: tokens.environment(of: $0)) }
        return .success(Route(targets: targets, event: .start, consumedPushToStart: startTokens))
    }
}
