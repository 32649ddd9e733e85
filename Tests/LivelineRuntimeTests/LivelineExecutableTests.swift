import Foundation
import LivelineAMQP
import LivelineChildProcess
import LivelineMessaging
import LivelineStore
import LivelineTestSupport
import Testing

/// The `liveline` binary itself, as on-call runs it: its output and its exit codes, for
/// `publish`, `trace`, `dlq list` and `replay`, `demo` and the workers. The commands that read a store get
/// a SQLite file of their own; those that need the broker get a virtual host of their own on
/// the one `scripts/test` starts, so the default topology's names touch nothing else there.
@Suite(.timeLimit(.minutes(2)))
struct LivelineExecutableTests {
    struct Run {
        var status: Int32
        var output: String
        var errors: String
        /// The lines of standard output that hold anything.
        var lines: [String] { output.split(separator: "\n").map(String.init) }
    }

    /// The built `liveline`: `LIVELINE_TEST_EXECUTABLE`, or the one beside this test bundle
    /// (SwiftPM builds every product into the same folder).
    static func executable() throws -> String {
        var candidates: [String] = []
        if let path = ProcessInfo.processInfo.environment["LIVELINE_TEST_EXECUTABLE"] { candidates.append(path) }
        let running = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        candidates.append(running.deletingLastPathComponent().appendingPathComponent("liveline").path)
        for argument in CommandLine.arguments where argument.contains(".xctest") {
            var url = URL(fileURLWithPath: argument)
            while url.pathComponents.count > 1, !url.lastPathComponent.hasSuffix(".xctest") { url.deleteLastPathComponent() }
            candidates.append(url.deletingLastPathComponent().appendingPathComponent("liveline").path)
        }
        candidates.append(
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../.build/debug/liveline").standardized.path)
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            Issue.record("no liveline executable among \(candidates); build it (swift build) or set LIVELINE_TEST_EXECUTABLE")
            throw CancellationError()
        }
        return found
    }

    /// Runs `liveline arguments` to its end with only `environment`'s settings (none of this
    /// process's `LIVELINE_*`), and reads what it wrote.
    static func liveline(_ arguments: [String], _ environment: [String: String] = [:]) async throws -> Run {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("liveline-run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("out").path
        let errors = directory.appendingPathComponent("err").path
        var settings = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("LIVELINE_") }
        // A relative default (the store's .liveline/liveline.sqlite) lands in the scratch folder.
        settings["LIVELINE_STORE_URL"] = "sqlite:\(directory.path)/default.sqlite"
        settings.merge(environment) { $1 }
        let child = try ChildProcess.start(try executable(), arguments: arguments, environment: settings, output: output, errorOutput: errors)
        let status = await child.exited()
        return Run(
            status: status,
            output: (try? String(contentsOfFile: output, encoding: .utf8)) ?? "",
            errors: (try? String(contentsOfFile: errors, encoding: .utf8)) ?? "")
    }

    /// A SQLite store in a file of its own, filled by `fill`, and the setting that names it.
    static func withStoreFile<T: Sendable>(
        _ fill: (SQLiteLivelineStore) async throws -> Void, _ body: ([String: String]) async throws -> T
    ) async throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("liveline-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.sqlite").path
        try await fill(try SQLiteLivelineStore(configuration: .init(path: path)))
        return try await body(["LIVELINE_STORE_URL": "sqlite:\(path)"])
    }

    static let gameState = #"{"homeScore":1,"awayScore":0,"period":"1st half","clock":"23:10","status":"live"}"#
    static let gameAttributes = """
        {"gameId":"g-1","league":"Premier League","homeTeam":{"name":"Arsenal","abbreviation":"ARS"},\
        "awayTeam":{"name":"Chelsea","abbreviation":"CHE"}}
        """

    // MARK: Arguments

    /// ArgumentParser's usage errors exit 64 with the reason on standard error.
    @Test func publishAndTraceSayWhatIsWrongWithTheirArguments() async throws {
        let help = try await Self.liveline(["publish", "--help"])
        #expect(help.status == 0)
        for option in ["--domain", "--user", "--topics", "--override", "--status", "--dry-run"] {
            #expect(help.output.contains(option), "publish --help shows \(option)")
        }

        let bare = try await Self.liveline(["publish"])
        #expect(bare.status == 64)
        #expect(bare.errors.contains("without --file, --domain, --activity and --state are required"), "\(bare.errors)")
        let both = try await Self.liveline(["publish", "--file", "event.json", "--domain", "ride"])
        #expect(both.status == 64 && both.errors.contains("give either --file or the event's flags"), "\(both.errors)")

        let zero = try await Self.liveline(["trace", "g-1", "--tail", "0"])
        #expect(zero.status == 64)
        #expect(zero.errors.contains("--tail must be at least 1"), "\(zero.errors)")
        let kind = try await Self.liveline(["trace", "g-1", "--kind", "apns"])
        #expect(kind.status == 64 && kind.errors.contains("--kind must be one of event-received, push-decided, apns-outcome"), "\(kind.errors)")
        let device = try await Self.liveline(["trace", "g-1", "--device", "phone-1"])
        #expect(device.status == 64 && device.errors.contains("--device takes the start of a device token in hex"), "\(device.errors)")
        let unknown = try await Self.liveline(["trace", "g-1", "--limit", "5"])
        #expect(unknown.status == 64 && unknown.errors.contains("--limit"), "\(unknown.errors)")
    }

    // MARK: publish

    /// A dry run validates and prints without a broker: a game's start with topics and no
    /// user, its overrides checked against the score domain's bounds.
    @Test func publishBuildsAnyEventADomainAcceptsFromFlags() async throws {
        let start = try await Self.liveline([
            "publish", "--dry-run", "--domain", "score", "--activity", "g-1", "--state", Self.gameState,
            "--attributes", Self.gameAttributes, "--topics", "team:arsenal,team:chelsea",
            "--override", "priority=10", "--override", "alert.title=Kick-off", "--override", "alert.body=Arsenal v Chelsea",
        ])
        #expect(start.status == 0, "\(start.errors)")
        let event = try #require(try JSONSerialization.jsonObject(with: Data(start.lines.first?.utf8 ?? "".utf8)) as? [String: Any])
        let data = try #require(event["data"] as? [String: Any])
        #expect(event["type"] as? String == "score.status" && event["subject"] as? String == "g-1")
        #expect(data["userId"] == nil)
        #expect(data["topics"] as? [String] == ["team:arsenal", "team:chelsea"])
        #expect((data["overrides"] as? [String: Any])?["priority"] as? Int == 10)
        #expect(start.lines.last?.hasPrefix("valid score event ") == true && start.lines.last?.hasSuffix("not published (--dry-run)") == true)

        let outOfBounds = try await Self.liveline([
            "publish", "--dry-run", "--domain", "score", "--activity", "g-1", "--state", Self.gameState,
            "--override", "relevanceScore=500",
        ])
        #expect(outOfBounds.status == 1)
        #expect(outOfBounds.output.isEmpty)
        #expect(outOfBounds.errors.contains(
            "the translator would dead-letter the event invalid-override: overrides.relevanceScore 500.0 is outside 0.0...100.0"),
            "\(outOfBounds.errors)")

        let noUser = try await Self.liveline([
            "publish", "--dry-run", "--domain", "ride", "--activity", "r-1", "--state", #"{"status":"driverAssigned"}"#,
        ])
        #expect(noUser.status == 1)
        #expect(noUser.errors.contains("--user is required: domain ride is not shared"), "\(noUser.errors)")
    }

    // MARK: trace

    /// A trace longer than the default tail shows its newest lines and says how many it left
    /// out; the filters pick lines before the tail, and `--json` leads with the count.
    @Test func traceShowsTheNewestLinesAndWhatItLeftOut() async throws {
        let t0 = Date(timeIntervalSince1970: 1_795_000_000)
        try await Self.withStoreFile({ store in
            let entries = (0..<2_500).map { index in
                TraceEntry(
                    activityID: "g-1", at: t0.addingTimeInterval(Double(index) / 100),
                    kind: index % 10 == 9 ? .retried : .apnsOutcome,
                    detail: "job \(index) update to update token \(index % 100 == 42 ? "80a1b2c3" : "5f9e04aa")…: delivered (200)")
            }
            try await store.appendTrace(entries)
        }) { settings in
            let all = try await Self.liveline(["trace", "g-1"], settings)
            #expect(all.status == 0, "\(all.errors)")
            #expect(all.lines.count == 1 + 1_000)
            #expect(all.lines.first?.hasPrefix("trace of g-1: the newest 1,000 of 2,500 line(s), ") == true, "\(all.lines.first ?? "")")
            #expect(all.lines.first?.hasSuffix("1,500 older line(s) left out (--tail N shows more)") == true)
            #expect(all.lines.last?.contains("job 2499 ") == true)
            #expect(all.lines.dropFirst().first?.contains("job 1500 ") == true)

            let json = try await Self.liveline(["trace", "g-1", "--tail", "5", "--json"], settings)
            #expect(json.status == 0, "\(json.errors)")
            #expect(json.lines.first == #"{"summary":{"activityId":"g-1","leftOut":2495,"matching":2500,"shown":5}}"#)
            let objects = try json.lines.dropFirst().map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
            #expect(objects.count == 5)
            #expect(objects.allSatisfy { $0["sequence"] is Int && $0["kind"] as? String != nil })

            let device = try await Self.liveline(["trace", "g-1", "--device", "80A1B2C3D4E5", "--kind", "apns-outcome"], settings)
            #expect(device.status == 0, "\(device.errors)")
            #expect(device.lines.first?.hasPrefix("trace of g-1 (kind apns-outcome, device 80a1b2c3): 25 line(s), ") == true, "\(device.lines.first ?? "")")
            #expect(device.lines.count == 1 + 25)
            #expect(device.lines.dropFirst().allSatisfy { $0.contains("token 80a1b2c3") && $0.contains(" apns ") })

            let none = try await Self.liveline(["trace", "g-2"], settings)
            #expect(none.status == 1)
            #expect(none.output == "no trace for activity g-2 (unknown, or older than the trace retention)\n")
        }
    }

    // MARK: --app

    /// On-call names an activity as its app does and says which app with --app (default: the
    /// deployment's default app); an app the deployment does not serve is refused, naming those it does.
    @Test func onCallCommandsTakeTheIdsOfTheAppTheyAreGiven() async throws {
        let t0 = Date(timeIntervalSince1970: 1_795_000_000)
        let eats = "com.example.eats"
        try await Self.withStoreFile({ store in
            try await store.appendTrace([
                TraceEntry(activityID: "r-1", at: t0, kind: .eventReceived, detail: "event e-1 of the default app"),
                TraceEntry(activityID: "\(eats)/r-1", at: t0, kind: .eventReceived, detail: "event e-2 of eats"),
            ])
            _ = try await store.keepDeadLetters([("letter-own", "r-1"), ("letter-eats", "\(eats)/r-1")].map { id, activity in
                DeadLetterRecord(
                    id: id, reason: "BadDeviceToken", source: .sender, message: "m", domain: "ride", activityID: activity,
                    eventID: "e", payloadKind: .job, body: Data("{}".utf8), routingKey: "ride.status", attempts: 1,
                    firstFailedAt: t0, lastFailedAt: t0, keptAt: t0, deaths: [])
            })
        }) { store in
            var settings = store
            settings["LIVELINE_TRANSLATOR_OTHER_APPS"] = eats
            let own = try await Self.liveline(["trace", "r-1"], settings)
            #expect(own.status == 0 && own.output.contains("of the default app") && !own.output.contains("of eats"), "\(own.errors)")
            let theirs = try await Self.liveline(["trace", "r-1", "--app", eats], settings)
            #expect(theirs.status == 0 && theirs.output.contains("of eats") && !theirs.output.contains("of the default app"))
            let unserved = try await Self.liveline(["trace", "r-1", "--app", "com.example.nope"], settings)
            #expect(unserved.status == 64)
            #expect(unserved.errors.contains("this deployment serves com.example.liveline, com.example.eats"), "\(unserved.errors)")
            let list = try await Self.liveline(["dlq", "list", "--app", eats, "--json"], settings)
            #expect(list.status == 0 && list.output.contains("letter-eats") && !list.output.contains("letter-own"), "\(list.errors)")
            let one = try await Self.liveline(["dlq", "list", "--activity", "r-1", "--json"], settings)
            #expect(one.output.contains("letter-own") && !one.output.contains("letter-eats"))
        }
    }

    // MARK: dlq list

    @Test func dlqListShowsTheStoresLettersAndCounts() async throws {
        let t0 = Date(timeIntervalSince1970: 1_795_000_000)
        try await Self.withStoreFile({ store in
            let letters = ["BadDeviceToken", "BadDeviceToken", "invalid-event"].enumerated().map { index, reason in
                DeadLetterRecord(
                    id: "letter-\(index)", reason: reason, source: index < 2 ? .sender : .translator, message: "m", domain: "ride",
                    activityID: "r-\(index)", eventID: "e-\(index)", payloadKind: index < 2 ? .job : .event,
                    body: Data("{}".utf8), routingKey: "ride.status", attempts: 1, firstFailedAt: t0.addingTimeInterval(Double(index)),
                    lastFailedAt: t0.addingTimeInterval(Double(index)), keptAt: t0.addingTimeInterval(Double(index) + 1), deaths: [])
            }
            _ = try await store.keepDeadLetters(letters)
        }) { settings in
            let list = try await Self.liveline(["dlq", "list"], settings)
            #expect(list.status == 0, "\(list.errors)")
            #expect(list.lines.first?.hasPrefix("LAST FAILED (UTC)") == true)
            #expect(list.lines.dropFirst().first?.contains("letter-2") == true, "newest first")
            #expect(list.output.contains("3 matching letter(s)") && list.output.contains("BadDeviceToken: 2"))

            let json = try await Self.liveline(["dlq", "list", "--reason", "BadDeviceToken", "--json"], settings)
            #expect(json.status == 0, "\(json.errors)")
            let document = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
            #expect(document["total"] as? Int == 2)
            #expect((document["letters"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == ["letter-1", "letter-0"])

            let badTime = try await Self.liveline(["dlq", "list", "--since", "yesterday"], settings)
            #expect(badTime.status != 0)
            #expect(badTime.errors.contains("--since takes an RFC 3339 time"), "\(badTime.errors)")
        }
    }

    /// A purge leaves an audit entry naming who ran it (`--as`, else the operating-system
    /// user), its choices, the counts by reason and every id it removed.
    @Test func aPurgeIsAuditedWithWhoAndWhatItRemoved() async throws {
        let t0 = Date(timeIntervalSince1970: 1_795_000_000)
        try await Self.withStoreFile({ store in
            _ = try await store.keepDeadLetters(["BadTopic", "BadTopic", "invalid-event"].enumerated().map { index, reason in
                DeadLetterRecord(
                    id: "letter-\(index)", reason: reason, source: .sender, message: "m", domain: "ride", activityID: "r-\(index)",
                    payloadKind: .job, body: Data("{}".utf8), routingKey: "ride.status", attempts: 1, firstFailedAt: t0,
                    lastFailedAt: t0, keptAt: t0, deaths: [])
            })
        }) { settings in
            let none = try await Self.liveline(["audit"], settings)
            #expect(none.status == 0 && none.output == "no on-call actions recorded\n", "\(none.output)\(none.errors)")
            let purge = try await Self.liveline(["dlq", "purge", "--reason", "BadTopic", "--yes", "--as", "alice"], settings)
            #expect(purge.status == 0, "\(purge.errors)")
            let other = try await Self.liveline(["dlq", "purge", "--yes"], settings)
            #expect(other.status == 0, "\(other.errors)")

            let audit = try await Self.liveline(["audit", "--json"], settings)
            #expect(audit.status == 0, "\(audit.errors)")
            let document = try #require(try JSONSerialization.jsonObject(with: Data(audit.output.utf8)) as? [String: Any])
            let entries = try #require(document["entries"] as? [[String: Any]])
            #expect(entries.count == 2)
            #expect(entries.first?["actor"] as? String == "alice" && entries.first?["actorSource"] as? String == "as")
            #expect(entries.first?["command"] as? String == "dlq purge")
            #expect((entries.first?["parameters"] as? [String: String])?["reason"] == "BadTopic")
            #expect(entries.first?["outcome"] as? String == "purged 2: BadTopic=2; ids: letter-0, letter-1")
            #expect(entries.last?["actorSource"] as? String == "os-user" && (entries.last?["actor"] as? String)?.isEmpty == false)

            let text = try await Self.liveline(["audit", "--since", "1h"], settings)
            #expect(text.lines.count == 2 && text.lines.first?.contains("alice (as)  dlq purge  reason=BadTopic") == true, "\(text.output)")
            let bad = try await Self.liveline(["audit", "--limit", "0"], settings)
            #expect(bad.status == 64 && bad.errors.contains("--limit must be at least 1"))
        }
    }

    /// The versions and locales apps registered, per domain: a table, and JSON for tools.
    @Test func registrationsCountTheDevicesPerVersionAndLocale() async throws {
        let t0 = Date(timeIntervalSince1970: 1_795_000_000)
        try await Self.withStoreFile({ store in
            for (user, version, locale) in [("u-1", 1, "de-DE"), ("u-2", 2, "de-DE"), ("u-3", 2, "en-GB")] {
                try await store.registerPushToStartToken(PushToStartToken(
                    userID: user, attributesType: "ScoreAttributes", token: String(repeating: "ab", count: 32), registeredAt: t0,
                    locale: locale, contentVersion: version))
            }
            _ = try await store.registerUpdateToken(UpdateTokenRegistration(
                activityID: "g-1", deviceID: "ipad", userID: "u-1", token: String(repeating: "cd", count: 32),
                contentVersion: 1, domain: "score", attributesType: "ScoreAttributes", at: t0))
        }) { settings in
            let text = try await Self.liveline(["registrations", "--domain", "score"], settings)
            #expect(text.status == 0, "\(text.errors)")
            #expect(text.lines.first == "score (ScoreAttributes): content-state version 2; older declared: 1", "\(text.output)")
            #expect(text.lines.contains("  1                      1              1"), "\(text.output)")
            #expect(text.lines.contains("  2                      0              2"), "\(text.output)")
            #expect(text.lines.contains("  none (fallback)        1              0"), "\(text.output)")

            let json = try await Self.liveline(["registrations", "--json"], settings)
            #expect(json.status == 0, "\(json.errors)")
            let document = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
            let domains = try #require(document["domains"] as? [[String: Any]])
            #expect(domains.compactMap { $0["domain"] as? String }.sorted() == ["delivery", "ride", "score"])
            let score = try #require(domains.first { $0["domain"] as? String == "score" })
            #expect(score["declaredVersions"] as? [Int] == [2, 1])
            let locales = try #require(score["locales"] as? [[String: Any]])
            #expect(locales.first { $0["value"] as? String == "de-DE" }?["pushToStart"] as? Int == 2)

            let unknown = try await Self.liveline(["registrations", "--domain", "curling"], settings)
            #expect(unknown.status != 0 && unknown.errors.contains("no domain curling: the configured ones are"), "\(unknown.errors)")
        }
    }

    // MARK: With the broker

    /// Runs `body` with the URL of a fresh virtual host on the test broker, deleted after.
    static func withVirtualHost<T>(_ body: (String) async throws -> T) async throws -> T {
        try await withBroker {
            let vhost = "cli-\(UUID().uuidString.prefix(8).lowercased())"
            try await Broker.control("vhost", "add", vhost)
            do {
                let base = Broker.url.hasSuffix("/%2f") ? String(Broker.url.dropLast("/%2f".count)) : Broker.url
                let result = try await body("\(base)/\(vhost)")
                try await Broker.control("vhost", "delete", vhost)
                return result
            } catch {
                try? await Broker.control("vhost", "delete", vhost)
                throw error
            }
        }
    }

    /// `publish` and `demo` against the broker: each publish confirmed, as they print.
    @Test func publishAndDemoPublishWithConfirms() async throws {
        try await Self.withVirtualHost { url in
            try await Self.withStoreFile({ _ in }) { settings in
                var environment = settings
                environment["LIVELINE_AMQP_URL"] = url
                let publish = try await Self.liveline([
                    "publish", "--domain", "score", "--activity", "g-1", "--state", Self.gameState,
                    "--attributes", Self.gameAttributes, "--topics", "team:arsenal",
                ], environment)
                #expect(publish.status == 0, "\(publish.errors)")
                #expect(publish.lines.last?.hasPrefix("published ") == true, "\(publish.output)")
                #expect(publish.lines.last?.hasSuffix("to liveline.events with routing key score.status (confirmed)") == true)

                let demo = try await Self.liveline(["demo"], environment)
                #expect(demo.status == 0, "\(demo.errors)")
                #expect(demo.lines.first?.hasPrefix("published demo run ") == true, "\(demo.output)")
                #expect(demo.output.contains("(every publish confirmed)"))

                // Without a broker, a one-shot command fails at once and says why.
                environment["LIVELINE_AMQP_URL"] = "amqp://guest:guest@127.0.0.1:1/%2f"
                let refused = try await Self.liveline(["demo"], environment)
                #expect(refused.status == 1)
                #expect(!refused.errors.isEmpty)
            }
        }
    }

    /// `dlq replay` into a broker that has no topology yet declares it, so the event waits in
    /// its translate queue for the workers; once the broker is laid out for other shard counts
    /// than the settings', a replay refuses, naming the setting, and the letter stays as it was.
    @Test func aReplayDeclaresTheTopologyOnAFreshBrokerAndRefusesAnotherLayout() async throws {
        let t0 = Date(timeIntervalSince1970: 1_795_000_000)
        try await Self.withVirtualHost { url in
            try await Self.withStoreFile({ store in
                _ = try await store.keepDeadLetters([DeadLetterRecord(
                    id: "letter-0", reason: "invalid-event", source: .translator, message: "m", domain: "ride", activityID: "r-1",
                    eventID: "e-1", payloadKind: .event, body: Data("{}".utf8), routingKey: "ride.status", attempts: 1,
                    firstFailedAt: t0, lastFailedAt: t0, keptAt: t0, deaths: [])])
            }) { settings in
                var environment = settings
                environment["LIVELINE_AMQP_URL"] = url
                let replay = try await Self.liveline(["dlq", "replay", "--yes"], environment)
                #expect(replay.status == 0, "\(replay.errors)")
                #expect(replay.lines.last == "replayed 1, skipped 0, failed 0", "\(replay.output)")
                let connection = try await AMQPConnection.connect(try AMQPConfiguration(url: url))
                let waiting = try await connection.messageCount(queue: LivelineTopology().translate.queue(0))
                await connection.close()
                #expect(waiting == 1, "the replayed event waits in the translate queue the replay declared")

                environment["LIVELINE_TRANSLATE_SHARDS"] = "2"
                let refused = try await Self.liveline(["dlq", "replay", "--yes", "--force"], environment)
                #expect(refused.status == 1)
                #expect(
                    refused.errors.contains("liveline.translate.shards is 2, but the broker's liveline.translate has 1 shard(s)"),
                    "\(refused.errors)")
                let list = try await Self.liveline(["dlq", "list", "--state", "replayed", "--json"], environment)
                let document = try #require(try JSONSerialization.jsonObject(with: Data(list.output.utf8)) as? [String: Any])
                #expect(document["total"] as? Int == 1, "the refused replay left the letter as the first replay marked it")
            }
        }
    }

    /// A translator and then a sender on one host with default settings both run, each with
    /// its ops endpoints on its own port; a third worker on a taken port says which.
    @Test func aTranslatorAndASenderRunSideBySideWithDefaultSettings() async throws {
        let keys = try APNsSettingsTests.Keys()
        try await Self.withVirtualHost { url in
            try await Self.withStoreFile({ _ in }) { settings in
                var environment = settings.merging(APNsSettingsTests.twoApps(keys)) { $1 }
                environment["LIVELINE_AMQP_URL"] = url
                // No APNs here: the sender runs, and its /readyz says its pushes could not go out.
                environment["LIVELINE_APNS_ENDPOINT"] = "127.0.0.1:1"
                var processEnvironment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("LIVELINE_") }
                processEnvironment.merge(environment) { $1 }
                let directory = FileManager.default.temporaryDirectory.appendingPathComponent("side-by-side-\(UUID().uuidString)")
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: directory) }
                let translator = try ChildProcess.start(
                    try Self.executable(), arguments: ["translator"], environment: processEnvironment,
                    output: directory.appendingPathComponent("translator.log").path)
                let sender = try ChildProcess.start(
                    try Self.executable(), arguments: ["sender"], environment: processEnvironment,
                    output: directory.appendingPathComponent("sender.log").path)
                func log(_ name: String) -> String {
                    (try? String(contentsOfFile: directory.appendingPathComponent("\(name).log").path, encoding: .utf8)) ?? ""
                }
                do {
                    for (name, port) in [("translator", 9090), ("sender", 9091)] {
                        try await eventually(timeout: .seconds(60), "the \(name) answers /healthz on \(port)") {
                            (try? await OpsEndpointsTests.get(port, "/healthz"))?.status == 200
                        }
                    }
                    #expect(translator.isRunning, "\(log("translator"))")
                    #expect(sender.isRunning, "\(log("sender"))")

                    let second = try await Self.liveline(["sender"], environment)
                    #expect(second.status == 1)
                    #expect(second.errors.contains("Error: liveline.ops.port: port 9091 is already in use (LIVELINE_OPS_PORT)"), "\(second.errors)")
                } catch {
                    _ = await translator.terminate(grace: .seconds(20))
                    _ = await sender.terminate(grace: .seconds(20))
                    throw error
                }
                #expect(await translator.terminate(grace: .seconds(30)), "the translator stops on SIGTERM")
                #expect(await sender.terminate(grace: .seconds(30)), "the sender stops on SIGTERM")
                #expect(translator.exitStatus == 0, "\(log("translator"))")
                #expect(sender.exitStatus == 0, "\(log("sender"))")
            }
        }
    }
}
