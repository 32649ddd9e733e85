import LivelineCore
import LivelineMessaging
import LivelineRuntime
import LivelineServices
import Testing

/// The workers' settings read from `environment` alone, as a process started with no file.
func workerSettings(_ environment: [String: String]) async throws -> WorkerSettings {
    try WorkerSettings(config: try await LivelineSettings.reader(file: nil, environment: environment))
}

/// The workers' settings with `variable` set to `value`, or with nothing set for nil.
func workerSettings(_ variable: String, _ value: String?) async throws -> WorkerSettings {
    try await workerSettings(value.map { [variable: $0] } ?? [:])
}

/// `liveline.retry.delays-seconds`: the sender's retry tiers, read and checked at start.
@Suite struct RetryTierSettingsTests {
    static func tiers(_ value: String?) async throws -> [LivelineTopology.RetryTier] {
        try await workerSettings("LIVELINE_RETRY_DELAYS_SECONDS", value).retryTiers
    }

    @Test func theDefaultIsFiveTiersOfTwelveMinutes() async throws {
        #expect(try await Self.tiers(nil) == LivelineTopology.RetryTier.defaults)
    }

    @Test func delaysBecomeTiersNamedByTheirLength() async throws {
        let tiers = try await Self.tiers("1, 2,120")
        #expect(tiers.map(\.name) == ["1s", "2s", "2m"])
        #expect(tiers.map(\.delay) == [.seconds(1), .seconds(2), .seconds(120)])
    }

    @Test(arguments: ["5,5", "30,5", "0,5", "5,,30", "five"])
    func aBadListIsRefusedNamingTheKey(value: String) async throws {
        let error = await #expect(throws: SettingsError.self) { try await Self.tiers(value) }
        #expect(error.map { "\($0)" }?.contains("liveline.retry.delays-seconds") == true)
    }
}

/// `liveline.translator.jobs-per-message`: how many jobs of one event share a message.
@Suite struct JobsPerMessageSettingsTests {
    static func jobsPerMessage(_ value: String?) async throws -> Int {
        try await workerSettings("LIVELINE_TRANSLATOR_JOBS_PER_MESSAGE", value).jobsPerMessage
    }

    @Test func defaultsTo16AndTakesAnyFrom1To1000() async throws {
        #expect(try await Self.jobsPerMessage(nil) == 16)
        #expect(try await Self.jobsPerMessage("1") == 1)
        #expect(try await Self.jobsPerMessage("1000") == 1000)
    }

    @Test(arguments: ["0", "-3", "1001", "sixteen"])
    func outOfRangeOrNoNumberIsRefusedNamingTheKey(value: String) async throws {
        let error = await #expect(throws: SettingsError.self) { try await Self.jobsPerMessage(value) }
        #expect(error.map { "\($0)" }?.contains("liveline.translator.jobs-per-message") == true)
    }

    /// The other worker settings read as numbers and flags refuse what is neither.
    @Test(arguments: [
        ("LIVELINE_TRACE_RETENTION_DAYS", "a week", "liveline.trace.retention-days must be a whole number"),
        ("LIVELINE_RETENTION_ACTIVITY_DAYS", "0", "liveline.retention.activity-days must be 1 to 36500, not 0"),
        ("LIVELINE_RETENTION_DEAD_LETTER_DAYS", "-1", "liveline.retention.dead-letter-days must be 1 to 36500, not -1"),
        ("LIVELINE_RETENTION_PUSH_TO_START_DAYS", "0", "liveline.retention.push-to-start-days must be 1 to 36500"),
        ("LIVELINE_RETENTION_FOLLOW_DAYS", "0", "liveline.retention.follow-days must be 1 to 36500"),
        ("LIVELINE_TRACE_RETENTION_DAYS", "0", "liveline.trace.retention-days must be 1 to 36500"),
        ("LIVELINE_KEEPER_ENABLED", "sometimes", "liveline.keeper.enabled must be true or false"),
    ])
    func aValueOfTheWrongKindIsRefused(variable: String, value: String, message: String) async throws {
        let error = await #expect(throws: SettingsError.self) {
            try await workerSettings([variable: value])
        }
        #expect(error.map { "\($0)" }?.contains(message) == true, "\(String(describing: error))")
    }
}

/// `liveline.translator.linger-ms`: how long a batch that is not full waits for more events.
@Suite struct LingerSettingsTests {
    static func linger(_ value: String?) async throws -> Int {
        try await workerSettings("LIVELINE_TRANSLATOR_LINGER_MS", value).lingerMilliseconds
    }

    @Test func defaultsToTheTranslatorsOwnAndTakesAnyFrom0To1000() async throws {
        #expect(try await Self.linger(nil) == Int(TranslatorSettings().linger / .milliseconds(1)))
        #expect(try await Self.linger("0") == 0)
        #expect(try await Self.linger("1000") == 1000)
    }

    @Test(arguments: ["-1", "1001", "soon"])
    func outOfRangeOrNoNumberIsRefusedNamingTheKey(value: String) async throws {
        let error = await #expect(throws: SettingsError.self) { try await Self.linger(value) }
        #expect(error.map { "\($0)" }?.contains("liveline.translator.linger-ms") == true)
    }
}

/// `liveline.translator.max-batch`: the most events in one batch, with a prefetch that keeps
/// six batches in reach.
@Suite struct MaxBatchSettingsTests {
    static func settings(_ value: String?) async throws -> WorkerSettings {
        try await workerSettings("LIVELINE_TRANSLATOR_MAX_BATCH", value)
    }

    @Test func unsetGivesTheTranslatorsOwnDefaults() async throws {
        let settings = try await Self.settings(nil).translatorSettings
        #expect(settings == TranslatorSettings())
    }

    @Test func smallBatchesKeepTheDefaultPrefetchAndLargeOnesRaiseIt() async throws {
        let ten = try await Self.settings("10").translatorSettings
        #expect(ten.maxBatchSize == 10)
        #expect(ten.prefetch == TranslatorSettings().prefetch)
        let thousand = try await Self.settings("1000").translatorSettings
        #expect(thousand.maxBatchSize == 1000)
        #expect(thousand.prefetch == 6000)
    }

    @Test(arguments: ["0", "1001", "-5", "many"])
    func outOfRangeOrNoNumberIsRefusedNamingTheKey(value: String) async throws {
        let error = await #expect(throws: SettingsError.self) { try await Self.settings(value) }
        #expect(error.map { "\($0)" }?.contains("liveline.translator.max-batch") == true)
    }
}

/// `liveline.sender.trace-flush-ms`: the longest the sender's trace lines (and their jobs'
/// acks) wait for their group commit.
@Suite struct TraceFlushSettingsTests {
    static func settings(_ value: String?) async throws -> WorkerSettings {
        try await workerSettings("LIVELINE_SENDER_TRACE_FLUSH_MS", value)
    }

    @Test func unsetGivesTheSendersDefaultOf50Milliseconds() async throws {
        let settings = try await Self.settings(nil).senderSettings
        #expect(settings.traceFlushInterval == .milliseconds(50))
        #expect(settings.traceFlushInterval == SenderSettings().traceFlushInterval)
    }

    @Test func aValueSetsTheIntervalAndKeepsTheTopology() async throws {
        var environment = ["LIVELINE_SENDER_TRACE_FLUSH_MS": "5", "LIVELINE_RETRY_DELAYS_SECONDS": "10,60"]
        let workers = try await workerSettings(environment)
        #expect(workers.senderSettings.traceFlushInterval == .milliseconds(5))
        #expect(workers.senderSettings.topology.retryTiers.map(\.name) == ["10s", "1m"])
        environment["LIVELINE_SENDER_TRACE_FLUSH_MS"] = "1000"
        let slowest = try await workerSettings(environment)
        #expect(slowest.senderSettings.traceFlushInterval == .seconds(1))
    }

    @Test(arguments: ["0", "1001", "-5", "soon"])
    func outOfRangeOrNoNumberIsRefusedNamingTheKey(value: String) async throws {
        let error = await #expect(throws: SettingsError.self) { try await Self.settings(value) }
        #expect(error.map { "\($0)" }?.contains("liveline.sender.trace-flush-ms") == true)
    }
}

/// `liveline.outcomes.domains`: whose events' outcomes are published, checked at start.
@Suite struct OutcomeDomainsSettingsTests {
    static func domains(_ value: String?) async throws -> OutcomeDomains {
        try await workerSettings("LIVELINE_OUTCOMES_DOMAINS", value).outcomes
    }

    @Test func noneByDefaultAllWithAStarOrTheDomainsNamed() async throws {
        #expect(try await Self.domains(nil).isEmpty)
        #expect(try await Self.domains("*").reports("delivery"))
        let named = try await Self.domains("ride, score")
        #expect(named.reports("ride") && named.reports("score") && !named.reports("delivery"))
        // The sender reads the same setting.
        #expect(try await workerSettings("LIVELINE_OUTCOMES_DOMAINS", "ride").senderSettings.outcomes == OutcomeDomains(parsing: "ride"))
    }

    @Test(arguments: ["rides", "ride,#", "ride.*"])
    func aNameThatIsNoConfiguredDomainIsRefused(value: String) async throws {
        let error = await #expect(throws: SettingsError.self) { try await Self.domains(value) }
        #expect(error.map { "\($0)" }?.contains("liveline.outcomes.domains") == true)
    }
}
