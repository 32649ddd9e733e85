import ArgumentParser
import Foundation
import LivelineAMQP
import LivelineCodecs
import LivelineCore
import LivelineMessaging
import LivelineRuntime
import LivelineServices
import LivelineStore
import Logging

// Tests: Tests/LivelineRuntimeTests/LivelineExecutableTests.swift, scripts/faults

/// `liveline dlq`: what is in the dead-letter queue, and putting it right.
struct DLQCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dlq",
        abstract: "List, show, replay and purge dead letters (from the store the keeper fills).",
        discussion: """
            The keeper (in every sender, or `liveline dlq keep`) moves each message of liveline.dead \
            into the store, so these commands filter a million letters without draining the queue.
            """,
        subcommands: [List.self, Show.self, Replay.self, Purge.self, Keep.self]
    )

    /// Filters shared by list, replay and purge.
    struct Filters: ParsableArguments {
        @Option(help: "Only this reason (e.g. BadDeviceToken, invalid-event, delivery_limit).") var reason: String?
        @Option(help: "Only this domain.") var domain: String?
        @Option(help: "Only this activity id (of --app).") var activity: String?
        @Option(help: "Only this app's letters (a bundle id); also the app --activity is of (default: the deployment's default app).")
        var app: String?
        @Option(help: "Last failure at or after: an RFC 3339 time or an age such as 30m, 2h, 7d.") var since: String?
        @Option(help: "Last failure before: an RFC 3339 time or an age such as 30m, 2h, 7d.") var until: String?
        @Option(help: "Only letters in this state: pending, replayed or skipped.") var state: String?

        /// The filters as given, for the audit.
        var parameters: [String: String?] {
            ["reason": reason, "domain": domain, "activity": activity, "app": app, "since": since, "until": until, "state": state]
        }

        /// The filter on the store's keys: `--activity` within `--app` (else the default app), and
        /// `--app` alone for that app's letters.
        func filter(_ domains: TranslatorConfiguration, now: Date = Date()) throws -> DeadLetterFilter {
            let scope = try AppOption.resolve(app, domains)
            var state: DeadLetterState?
            if let text = self.state {
                guard let parsed = DeadLetterState(rawValue: text) else {
                    throw ValidationError("--state must be pending, replayed or skipped, not \(text)")
                }
                state = parsed
            }
            return DeadLetterFilter(
                reason: reason, domain: domain, activityID: activity.map { domains.keys.key(app: scope, id: $0) },
                app: app == nil ? nil : scope,
                since: try since.map { try OnCallTime.parse($0, option: "--since", now: now) },
                until: try until.map { try OnCallTime.parse($0, option: "--until", now: now) }, state: state)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Dead letters, newest first, then the counts per reason.")
        @OptionGroup var options: CommonOptions
        @OptionGroup var filters: Filters
        @Option(help: "At most this many letters in the table.") var limit = 50
        @Flag(help: "JSON for tools (shape in the README).") var json = false

        func validate() throws {
            guard limit >= 1 else { throw ValidationError("--limit must be at least 1") }
        }

        func run() async throws {
            try await withOnCallStore(options) { store, settings in
                let filter = try filters.filter(settings.domains)
                let letters = try await store.deadLetters(matching: filter, limit: limit)
                let counts = try await store.deadLetterCounts(matching: filter)
                print(json ? try DeadLetterListing.json(letters, counts: counts) : DeadLetterListing.text(letters, counts: counts))
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "One dead letter in full, and its activity as the store has it now.")
        @OptionGroup var options: CommonOptions
        @Argument(help: "The letter's id, as `dlq list` shows it.") var id: String
        @Flag(help: "JSON for tools (shape in the README).") var json = false

        func run() async throws {
            try await withOnCallStore(options) { store, _ in
                guard let letter = try await store.deadLetter(id: id) else {
                    throw OnCallError("no dead letter with id \(id) (see `liveline dlq list`)")
                }
                var activity: ActivityRecord?
                var devices: [UpdateToken] = []
                if let activityID = letter.activityID, let record = try await store.activity(id: activityID) {
                    activity = record
                    devices = try await store.loadSnapshots([
                        SnapshotRequest(activityID: activityID, userID: record.userID, attributesType: record.attributesType)
                    ])[activityID]?.updateTokens ?? []
                }
                print(json
                    ? try DeadLetterDetail.json(letter, activity: activity, devices: devices)
                    : DeadLetterDetail.text(letter, activity: activity, devices: devices))
            }
        }
    }

    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send dead letters again, or skip them with a reason; marks each one after the broker confirmed it.",
            discussion: """
                Events go back to liveline.events (over-budget ones at priority 5). Push jobs are skipped when the \
                activity ended (updates), is past its lifetime, a newer event was applied, or the token is gone; \
                otherwise they are sent re-stamped. Letters already replayed or skipped need --force.
                """)
        @OptionGroup var options: CommonOptions
        @OptionGroup var filters: Filters
        @Option(help: "At most this many letters.") var limit = 100_000
        @Flag(help: "Print what would happen and change nothing.") var dryRun = false
        @Flag(help: "Also replay letters that were replayed or skipped before.") var force = false
        @Flag(help: "Do not ask for confirmation on a terminal.") var yes = false
        @Flag(help: "JSON for tools: every step, then the summary.") var json = false
        @OptionGroup var audit: AuditOptions

        func validate() throws {
            guard limit >= 1 else { throw ValidationError("--limit must be at least 1") }
        }

        func run() async throws {
            let config = try await LivelineSettings.reader(file: options.config)
            let settings = try LivelineSettings(config: config)
            let filter = try filters.filter(settings.domains)
            // Replayed jobs go to their send shard, so the shard counts must be the workers'.
            let workers = try WorkerSettings(config: config, domains: settings.domains)
            let topology = workers.topology
            let logger = onCallLogger(options)
            try await settings.store.withStore(logger: logger, apps: settings.apps) { store in
                let counting = DeadLetterReplay(store: store, connection: nil, topology: topology)
                let total = min(limit, try await counting.count(matching: filter, force: force))
                if total == 0 {
                    print(json ? try ReplayProgress.document(steps: [], DeadLetterReplay.Summary(dryRun: dryRun)) : "no dead letters to replay")
                    return
                }
                if !dryRun, !yes {
                    guard Terminal.isInteractive else {
                        throw OnCallError("replaying \(total) letter(s) needs --yes when not on a terminal (or --dry-run)")
                    }
                    guard Terminal.confirm("replay \(total) dead letter(s)?") else { throw OnCallError("not confirmed; nothing replayed") }
                }
                let progress = ReplayProgress(total: total, json: json, verbose: dryRun)
                func replay(through connection: AMQPConnection?) async throws -> DeadLetterReplay.Summary {
                    var replay = DeadLetterReplay(store: store, connection: connection, topology: topology)
                    if !workers.outcomes.isEmpty {
                        replay.outcomes = OutcomeReporter(domains: workers.outcomes, topology: topology, stage: .dlq)
                    }
                    return try await replay.run(matching: filter, limit: limit, force: force, dryRun: dryRun) { progress.record($0) }
                }
                let summary: DeadLetterReplay.Summary
                if dryRun {
                    summary = try await replay(through: nil)
                } else {
                    summary = try await withPublisher(settings.amqp, topology: topology, as: "dlq-replay", logger: logger) {
                        try await replay(through: $0)
                    }
                }
                if !dryRun {
                    var parameters = filters.parameters
                    parameters["limit"] = "\(limit)"
                    parameters["force"] = force ? "true" : nil
                    try await audit.record("dlq replay", parameters: parameters, outcome: ReplayProgress.summaryText(summary), in: store)
                }
                print(json ? try ReplayProgress.document(steps: progress.finish(), summary) : ReplayProgress.summaryText(summary))
                if summary.failed > 0 { throw ExitCode.failure }
            }
        }
    }

    struct Purge: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete dead letters from the store for good.")
        @OptionGroup var options: CommonOptions
        @OptionGroup var filters: Filters
        @Option(help: "Only letters whose last failure is older than this age (e.g. 7d, 12h).") var olderThan: String?
        @Flag(help: "Do not ask for confirmation.") var yes = false
        @Flag(help: "JSON for tools: {\"purged\": n}.") var json = false
        @OptionGroup var audit: AuditOptions

        func run() async throws {
            try await withOnCallStore(options) { store, settings in
                var filter = try filters.filter(settings.domains)
                if let olderThan {
                    let cutoff = try OnCallTime.parse(olderThan, option: "--older-than", now: Date(), agesOnly: true)
                    filter.until = min(filter.until ?? cutoff, cutoff)
                }
                let count = try await store.deadLetterCounts(matching: filter).values.reduce(0, +)
                if count == 0 {
                    print(json ? #"{"purged":0}"# : "no dead letters match; nothing purged")
                    return
                }
                if !yes {
                    guard Terminal.isInteractive else {
                        throw OnCallError("purging \(count) letter(s) needs --yes when not on a terminal")
                    }
                    guard Terminal.confirm("purge \(count) dead letter(s) for good?") else {
                        throw OnCallError("not confirmed; nothing purged")
                    }
                }
                // What goes, for the audit: counts by reason and every id.
                let reasons = try await store.deadLetterCounts(matching: filter)
                let ids = try await store.deadLetters(matching: filter, limit: count).map(\.id)
                let purged = try await store.purgeDeadLetters(matching: filter)
                var parameters = filters.parameters
                parameters["older-than"] = olderThan
                let byReason = reasons.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")
                try await audit.record(
                    "dlq purge", parameters: parameters,
                    outcome: "purged \(purged): \(byReason); ids: \(ids.sorted().joined(separator: ", "))", in: store)
                print(json ? #"{"purged":\#(purged)}"# : "purged \(purged) dead letter(s)")
            }
        }
    }

    struct Keep: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run the dead-letter keeper alone (every sender runs one unless liveline.keeper.enabled is false).")
        @OptionGroup var options: CommonOptions

        func run() async throws {
            let logger = options.logger("liveline.keeper")
            let settings = try await LivelineSettings.load(file: options.config)
            try await settings.store.withStore(logger: logger, retry: StartupRetry(), apps: settings.apps) { store in
                try await runDeadLetterKeeper(settings, store: store, logger: logger)
            }
        }
    }
}

/// `liveline trace <activity>`: the activity's story, from the store's trace.
struct TraceCommand: AsyncParsableCommand {
    /// How many of the newest lines `trace` shows unless told: a ride's or a delivery's whole
    /// story is tens of lines, and a game's with 100,000 fans is cut to its last moments.
    static let defaultTail = 1_000

    static let configuration = CommandConfiguration(
        commandName: "trace",
        abstract: "An activity's story in order: events, decisions, pushes per device, retries, dead letters, replays.",
        discussion: """
            Shows the newest \(defaultTail) lines unless --tail says otherwise, and says how many older lines it left out. \
            --kind and --device choose lines before the tail is taken.
            """)
    @OptionGroup var options: CommonOptions
    @Argument(help: "The activity id (of --app).") var activity: String
    @OptionGroup var app: AppOption
    @Flag(help: "JSON Lines for tools: a summary object, then one object per line (shapes in the README).") var json = false
    @Flag(help: "Keep printing new lines as they are written (Ctrl-C to stop).") var follow = false
    @Option(help: "Show the newest this many lines (default \(TraceCommand.defaultTail)).") var tail = TraceCommand.defaultTail
    @Option(
        name: .customLong("kind"),
        help: "Only lines of this kind; repeat for several: \(TraceEntry.Kind.allCases.map(\.rawValue).joined(separator: ", ")).")
    var kinds: [String] = []
    @Option(help: "Only lines about the device whose token starts with this (hex; the trace shows 8 characters).")
    var device: String?

    func validate() throws {
        guard tail >= 1 else {
            throw ValidationError("--tail must be at least 1: how many of the newest lines to show (default \(Self.defaultTail))")
        }
        _ = try filter()
    }

    /// The lines asked for. A device is named in trace details as `token <first 8 characters>…`
    /// (`PushTarget.logDescription`), so that is what its prefix is matched against.
    func filter() throws -> TraceFilter {
        var filter = TraceFilter()
        for text in kinds {
            guard let kind = TraceEntry.Kind(rawValue: text) else {
                throw ValidationError(
                    "--kind must be one of \(TraceEntry.Kind.allCases.map(\.rawValue).joined(separator: ", ")), not \(text)")
            }
            filter.kinds.insert(kind)
        }
        if let device {
            let prefix = device.lowercased()
            guard !prefix.isEmpty, prefix.allSatisfy(\.isHexDigit) else {
                throw ValidationError("--device takes the start of a device token in hex, such as 80a1b2c3, not \(device)")
            }
            filter.detailContains = "token \(prefix.prefix(8))"
        }
        return filter
    }

    /// `--kind` and `--device` as the header names them, or nil without either.
    var filterDescription: String? {
        let parts = kinds.map { "kind \($0)" } + (device.map { ["device \($0.lowercased().prefix(8))"] } ?? [])
        return parts.isEmpty ? nil : parts.joined(separator: ", ")
    }

    func run() async throws {
        let filter = try filter()
        try await withOnCallStore(options) { store, settings in
            let activity = settings.domains.keys.key(app: try app.resolve(settings.domains), id: self.activity)
            let newest = try await store.traceTail(activityID: activity, matching: filter, limit: tail)
            let header = json
                ? try TraceTimeline.jsonSummary(activityID: activity, tail: newest)
                : TraceTimeline.header(activityID: activity, tail: newest, filters: filterDescription)
            FileHandle.standardOutput.write(Data((header + "\n").utf8))
            let start = newest.lines.first?.entry.at ?? Date()
            func emit(_ batch: [TraceLine]) throws {
                // Written straight away, not through print's buffer, so --follow into a pipe streams.
                for line in batch where filter.matches(line.entry) {
                    let text = json ? try TraceTimeline.json(line) : TraceTimeline.text(line, start: start)
                    FileHandle.standardOutput.write(Data((text + "\n").utf8))
                }
            }
            try emit(newest.lines)
            guard follow else {
                if newest.lines.isEmpty && !json { throw ExitCode.failure }
                return
            }
            // Follow from the newest line written so far, matching or not, so lines the filters
            // skipped are not read again.
            var last = newest.lines.map(\.sequence).max() ?? 0
            if !filter.takesEverything {
                last = max(last, try await store.traceTail(activityID: activity, matching: TraceFilter(), limit: 1).lines.last?.sequence ?? 0)
            }
            while !Task.isCancelled {
                let batch = try await store.traceLines(activityID: activity, after: last, limit: 1000)
                try emit(batch)
                last = batch.last?.sequence ?? last
                // A full page means more are waiting: read on at once.
                if batch.count < 1000 { try await Task.sleep(for: .milliseconds(500)) }
            }
        }
    }
}

/// `liveline publish`: one domain event from the command line, validated, printed, confirmed.
struct PublishCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Publish one domain event (a CloudEvent file, or built from flags) after validating it locally.",
        discussion: """
            The event is checked as the translator will check it, overrides against the domain's bounds included, \
            before anything is published. A shared domain's events (score) take no --user.

            Examples:
              liveline publish --file event.json
              liveline publish --domain ride --activity r-1 --user u-1 \\
                --state '{"driverName":"Maria","status":"driverArrived", …}'
              liveline publish --domain score --activity g-1 --topics team:arsenal,team:chelsea \\
                --attributes '{…}' --state '{…}' --override priority=10 --override staleDate=+15m
            """)
    @OptionGroup var options: CommonOptions
    @Option(help: "A CloudEvent in structured JSON (the whole envelope).") var file: String?
    @Option(help: "The domain (ride, delivery, score, or a configured one).") var domain: String?
    @Option(help: "The event name, the part of `type` after the domain.") var type = "status"
    @Option(help: "data.activityId.") var activity: String?
    @Option(help: "data.userId; not for a shared domain's events.") var user: String?
    @Option(help: "data.contentState, as JSON.") var state: String?
    @Option(help: "data.status: a generic domain's status.") var status: String?
    @Option(help: "data.attributes, as JSON (needed for push-to-start).") var attributes: String?
    @Option(help: "data.message, free text for alerts.") var message: String?
    @Option(help: "data.topics: a shared activity's start, as <kind>:<id> separated by commas (team:arsenal,league:epl).")
    var topics: String?
    @Option(
        name: .customLong("override"),
        help: """
            One of data.overrides as key=value; repeat for more. Keys: \(EventDraft.overrideKeys.joined(separator: ", ")). \
            Times are RFC 3339 or +30m after the event.
            """)
    var overrides: [String] = []
    @Option(help: "The event time, RFC 3339 (default now).") var time: String?
    @Option(help: "The app the event is for, its bundleid attribute (default: its domain's app).") var app: String?
    @Flag(help: "Validate and print only; publish nothing.") var dryRun = false
    @OptionGroup var audit: AuditOptions

    func validate() throws {
        let flags = [domain, activity, user, state, status, attributes, message, topics, time, app].contains { $0 != nil } || !overrides.isEmpty
        if file != nil, flags {
            throw ValidationError("give either --file or the event's flags (--domain, --activity, --state, …), not both")
        }
        if file == nil, domain == nil || activity == nil || state == nil {
            throw ValidationError("without --file, --domain, --activity and --state are required (and --user, unless the domain is shared)")
        }
    }

    func run() async throws {
        let logger = onCallLogger(options)
        let config = try await LivelineSettings.reader(file: options.config)
        let settings = try LivelineSettings(config: config)
        let workers = try WorkerSettings(config: config, domains: settings.domains)
        let translator = Translator(configuration: workers.translator)
        let body = try eventBody(translator)
        let event = try translator.validateForPublishing(body)
        print(String(decoding: body, as: UTF8.self))
        if dryRun {
            print("valid \(event.domain) event \(event.id) for activity \(AppKeys.id(of: event.activityId)) of \(event.app); not published (--dry-run)")
            return
        }
        let topology = workers.topology
        try await withPublisher(settings.amqp, topology: topology, as: "publish", logger: logger) { connection in
            try await connection.publish(AMQPMessage(
                exchange: topology.eventsExchange, routingKey: event.envelope.type, body: body,
                properties: AMQPProperties(
                    contentType: "application/cloudevents+json",
                    headers: [LivelineTopology.activityHeader: .string(AppKeys.id(of: event.activityId))], persistent: true,
                    messageID: event.id, timestamp: event.time.date, type: event.envelope.type),
                mandatory: true))
        }
        try await settings.store.withStore(logger: logger, apps: settings.apps) { store in
            try await audit.record(
                "publish",
                parameters: ["file": file, "domain": event.domain, "app": event.app, "activity": AppKeys.id(of: event.activityId), "event": event.id],
                outcome: "published \(event.envelope.type) event \(event.id) (confirmed)", in: store)
        }
        print("published \(event.id) to \(topology.eventsExchange) with routing key \(event.envelope.type) (confirmed)")
    }

    private func eventBody(_ translator: Translator) throws -> Data {
        if let file {
            do { return try Data(contentsOf: URL(fileURLWithPath: file)) } catch {
                throw OnCallError("cannot read \(file)")
            }
        }
        guard let domain, let activity, let state else { throw OnCallError("--domain, --activity and --state are required") }
        // A personal domain's event names its user; say so in the flags' words, not the parser's.
        if user == nil, translator.domain(named: domain) != nil, !translator.isShared(domain: domain) {
            throw OnCallError("--user is required: domain \(domain) is not shared, so each of its activities belongs to a user")
        }
        var draft = EventDraft(domain: domain, activity: activity, state: state)
        draft.type = type
        draft.user = user
        draft.status = status
        draft.attributes = attributes
        draft.message = message
        draft.topics = topics
        draft.overrides = overrides
        draft.time = time
        draft.app = app
        return try draft.body()
    }
}

/// `liveline demo`: the demo scenario against a running system.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Publish the demo ride, delivery and game to a running system (translator, sender, APNs simulator).")
    @OptionGroup var options: CommonOptions
    @Option(help: "Publish a new run every this many seconds until stopped (default: once).") var every: Int?

    func validate() throws {
        if let every, every < 1 { throw ValidationError("--every must be at least 1 second") }
    }

    func run() async throws {
        let logger = onCallLogger(options)
        let config = try await LivelineSettings.reader(file: options.config)
        let settings = try LivelineSettings(config: config)
        var demo = Demo()
        demo.topology = try WorkerSettings(config: config, domains: settings.domains).topology
        try await settings.store.withStore(logger: logger, apps: settings.apps) { store in
            try await withPublisher(settings.amqp, topology: demo.topology, as: "demo", logger: logger) { connection in
                repeat {
                    for line in try await demo.publishOnce(connection: connection, store: store) { print(line) }
                    if let every { try await Task.sleep(for: .seconds(every)) }
                } while every != nil && !Task.isCancelled
            }
        }
    }
}

/// Opens the configured store for a one-shot on-call command.
func withOnCallStore(_ options: CommonOptions, _ body: (any ActivityStore, LivelineSettings) async throws -> Void) async throws {
    let settings = try await LivelineSettings.load(file: options.config)
    try await settings.store.withStore(logger: onCallLogger(options), apps: settings.apps) { store in try await body(store, settings) }
}

/// On-call commands print their answer on standard output; their log stays at warning
/// unless --log-level asks for debug or trace.
func onCallLogger(_ options: CommonOptions) -> Logger {
    var logger = options.logger("liveline.oncall")
    if logger.logLevel > .debug { logger.logLevel = max(logger.logLevel, .warning) }
    return logger
}

/// A one-line error for on-call commands; ArgumentParser prints it and exits non-zero.
struct OnCallError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
