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
        @Option(help: "Only this activity id.") var activity: String?
        @Option(help: "Last failure at or after: an RFC 3339 time or an age such as 30m, 2h, 7d.") var since: String?
        @Option(help: "Last failure before: an RFC 3339 time or an age such as 30m, 2h, 7d.") var until: String?
        @Option(help: "Only letters in this state: pending, replayed or skipped.") var state: String?

        func filter(now: Date = Date()) throws -> DeadLetterFilter {
            var state: DeadLetterState?
            if let text = self.state {
                guard let parsed = DeadLetterState(rawValue: text) else {
                    throw ValidationError("--state must be pending, replayed or skipped, not \(text)")
                }
                state = parsed
            }
            return DeadLetterFilter(
                reason: reason, domain: domain, activityID: activity,
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
            let filter = try filters.filter()
            try await withOnCallStore(options) { store in
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
            try await withOnCallStore(options) { store in
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

        func validate() throws {
            guard limit >= 1 else { throw ValidationError("--limit must be at least 1") }
        }

        func run() async throws {
            let filter = try filters.filter()
            let config = try await LivelineSettings.reader(file: options.config)
            let settings = try LivelineSettings(config: config)
            // Replayed jobs go to their send shard, so the shard counts must be the workers'.
            let topology = try WorkerSettings(config: config).topology
            let logger = onCallLogger(options)
            try await settings.store.withStore(logger: logger) { store in
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
                let connection = dryRun ? nil : try await connect(settings.amqp, as: "dlq-replay", logger: logger)
                let progress = ReplayProgress(total: total, json: json, verbose: dryRun)
                let summary: DeadLetterReplay.Summary
                do {
                    summary = try await DeadLetterReplay(store: store, connection: connection, topology: topology)
                        .run(matching: filter, limit: limit, force: force, dryRun: dryRun) { progress.record($0) }
                } catch {
                    await connection?.close()
                    throw error
                }
                await connection?.close()
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

        func run() async throws {
            var filter = try filters.filter()
            if let olderThan {
                let cutoff = try OnCallTime.parse(olderThan, option: "--older-than", now: Date(), agesOnly: true)
                filter.until = min(filter.until ?? cutoff, cutoff)
            }
            try await withOnCallStore(options) { store in
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
                let purged = try await store.purgeDeadLetters(matching: filter)
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
            try await settings.store.withStore(logger: logger, retry: StartupRetry()) { store in
                let connection = try await connect(settings.amqp, as: "dead-letter-keeper", logger: logger, retry: StartupRetry())
                try await runUntilSignalled([DeadLetterKeeper(connection: connection, store: store, logger: logger)], logger: logger)
                await connection.close()
            }
        }
    }
}

/// `liveline trace <activity>`: the activity's story, from the store's trace.
struct TraceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trace",
        abstract: "An activity's story in order: events, decisions, pushes per device, retries, dead letters, replays.")
    @OptionGroup var options: CommonOptions
    @Argument(help: "The activity id.") var activity: String
    @Flag(help: "JSON Lines for tools, one object per line (shape in the README).") var json = false
    @Flag(help: "Keep printing new lines as they are written (Ctrl-C to stop).") var follow = false
    @Option(help: "Show at most the first this many lines.") var limit = 10_000

    func run() async throws {
        try await withOnCallStore(options) { store in
            var lines = try await store.traceLines(activityID: activity, after: 0, limit: limit)
            if !json { FileHandle.standardOutput.write(Data((TraceTimeline.header(activityID: activity, lines: lines) + "\n").utf8)) }
            let start = lines.first?.entry.at ?? Date()
            var last: Int64 = 0
            func emit(_ batch: [TraceLine]) throws {
                // Written straight away, not through print's buffer, so --follow into a pipe streams.
                for line in batch {
                    let text = json ? try TraceTimeline.json(line) : TraceTimeline.text(line, start: start)
                    FileHandle.standardOutput.write(Data((text + "\n").utf8))
                }
                last = batch.last?.sequence ?? last
            }
            try emit(lines)
            guard follow else {
                if lines.isEmpty && !json { throw ExitCode.failure }
                return
            }
            while !Task.isCancelled {
                try await Task.sleep(for: .milliseconds(500))
                lines = try await store.traceLines(activityID: activity, after: last, limit: 1000)
                try emit(lines)
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
            Examples:
              liveline publish --file event.json
              liveline publish --domain ride --activity r-1 --user u-1 \\
                --state '{"driverName":"Maria","status":"driverArrived", …}'
            """)
    @OptionGroup var options: CommonOptions
    @Option(help: "A CloudEvent in structured JSON (the whole envelope).") var file: String?
    @Option(help: "The domain (ride, delivery, score, or a configured one).") var domain: String?
    @Option(help: "The event name, the part of `type` after the domain.") var type = "status"
    @Option(help: "data.activityId.") var activity: String?
    @Option(help: "data.userId.") var user: String?
    @Option(help: "data.contentState, as JSON.") var state: String?
    @Option(help: "data.attributes, as JSON (needed for push-to-start).") var attributes: String?
    @Option(help: "data.message, free text for alerts.") var message: String?
    @Option(help: "The event time, RFC 3339 (default now).") var time: String?
    @Flag(help: "Validate and print only; publish nothing.") var dryRun = false

    func validate() throws {
        if file != nil, domain != nil || activity != nil || state != nil {
            throw ValidationError("give either --file or --domain/--activity/--user/--state, not both")
        }
        if file == nil, domain == nil || activity == nil || user == nil || state == nil {
            throw ValidationError("without --file, --domain, --activity, --user and --state are required")
        }
    }

    func run() async throws {
        let logger = onCallLogger(options)
        let config = try await LivelineSettings.reader(file: options.config)
        let settings = try LivelineSettings(config: config)
        let workers = try WorkerSettings(config: config)
        let body = try eventBody()
        let event: DomainEvent
        do {
            event = try Translator(configuration: workers.translator).parse(body)
        } catch {
            throw OnCallError("the event is not valid for this deployment's domains: \(error.message)")
        }
        print(String(decoding: body, as: UTF8.self))
        if dryRun {
            print("valid \(event.domain) event \(event.id) for activity \(event.activityId); not published (--dry-run)")
            return
        }
        let topology = workers.topology
        let connection = try await connect(settings.amqp, as: "publish", logger: logger)
        do {
            try await connection.declare(topology.amqp)
            try await connection.publish(AMQPMessage(
                exchange: topology.eventsExchange, routingKey: event.envelope.type, body: body,
                properties: AMQPProperties(
                    contentType: "application/cloudevents+json",
                    headers: [LivelineTopology.activityHeader: .string(event.activityId)], persistent: true,
                    messageID: event.id, timestamp: event.time.date, type: event.envelope.type),
                mandatory: true))
        } catch {
            await connection.close()
            throw error
        }
        await connection.close()
        print("published \(event.id) to \(topology.eventsExchange) with routing key \(event.envelope.type) (confirmed)")
    }

    private func eventBody() throws -> Data {
        if let file {
            do { return try Data(contentsOf: URL(fileURLWithPath: file)) } catch {
                throw OnCallError("cannot read \(file)")
            }
        }
        func json(_ text: String, _ option: String) throws -> JSONValue {
            do { return try JSONValue.parse(text) } catch { throw OnCallError("\(option) is not JSON: \(error)") }
        }
        var data: [String: JSONValue] = [
            "activityId": .string(activity ?? ""), "userId": .string(user ?? ""),
            "contentState": try json(state ?? "", "--state"),
        ]
        if let attributes { data["attributes"] = try json(attributes, "--attributes") }
        if let message { data["message"] = .string(message) }
        var envelope: [String: JSONValue] = [
            "specversion": .string("1.0"), "id": .string(UUID().uuidString.lowercased()),
            "source": .string("//liveline-cli"), "type": .string("\(domain ?? "").\(type)"),
            "subject": .string(activity ?? ""), "datacontenttype": .string("application/json"), "data": .object(data),
        ]
        let eventTime = try time.map { text -> EventTime in
            guard let parsed = RFC3339.parse(text) else { throw OnCallError("--time must be RFC 3339, e.g. 2026-11-23T10:00:00.000Z") }
            return parsed
        } ?? EventTime(Date())
        envelope["time"] = .string(RFC3339.format(eventTime))
        return JSONValue.encoded(.object(envelope))
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
        demo.topology = try WorkerSettings(config: config).topology
        try await settings.store.withStore(logger: logger) { store in
            let connection = try await connect(settings.amqp, as: "demo", logger: logger)
            do {
                repeat {
                    for line in try await demo.publishOnce(connection: connection, store: store) { print(line) }
                    if let every { try await Task.sleep(for: .seconds(every)) }
                } while every != nil && !Task.isCancelled
            } catch {
                await connection.close()
                throw error
            }
            await connection.close()
        }
    }
}

/// Opens the configured store for a one-shot on-call command.
func withOnCallStore(_ options: CommonOptions, _ body: (any ActivityStore) async throws -> Void) async throws {
    let settings = try await LivelineSettings.load(file: options.config)
    try await settings.store.withStore(logger: onCallLogger(options), body)
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
