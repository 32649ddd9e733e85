import LivelineMessaging
import LivelineServices

// Tests: Tests/LivelineRuntimeTests/SettingTests.swift, Tests/LivelineRuntimeTests/SettingsTests.swift

// Every setting a Liveline process reads. The reference is written from `all`, in its order:
// add a declaration there too (scripts/check-settings fails on one that is not).
extension Setting {
    public static let all: [Setting] = [
        amqpURL, storeURL, sqliteCacheMiB,
        apiHost, apiPort, jwtHS256Secret, jwtES256PublicKeyFile, jwtIssuer, jwtAudience, tokenEnvironments,
        userRequestsPerMinute, appRequestsPerSecond, devicesPerUser, followsPerUser, topicKinds, producersFile,
        maxBatchEvents, maxBodyBytes, publishTimeout, webhookGiveUp,
        bundleID, otherApps, domainsFile, jobsPerMessage, audiencePage, linger, maxBatch, translateShards, sendShards,
        traceFlush, senderPrefetchMiB,
        apps, appBundleID, appTeamID, appKeyID, appKey, appEnvironment,
        productionEndpoint, sandboxEndpoint, endpoint, caFile,
        opsHost, opsPort, stallAfter, drainTimeout,
        traceRetention, activityRetention, pushToStartRetention, deadLetterRetention, auditRetention, followRetention,
        eventIDRetention, pruneBusyPercent,
        outcomeDomains, sweepOrphans, keeperEnabled, retryDelays,
    ]

    static let days = 1...36_500
    static let workers = "translator, sender"
    static let everyShardUser = "translator, sender, api, `run`, `demo`, `publish`, `dlq replay`, `user forget`"

    // MARK: The broker and the store

    static let amqpURL = Setting(
        "amqp.url", .secret("URL, `amqp://` or `amqps://`", default: "amqp://guest:guest@127.0.0.1:5672/%2f"),
        readBy: "translator, sender, api (`DELETE /v1/me`), `run`, `dlq replay`, `dlq keep`, `publish`, `demo`, `user forget`",
        """
        The broker. The path is the virtual host, percent-encoded (`/%2f` is `/`). Query parameters: `heartbeat`, \
        `connection_timeout` and `confirm_timeout` in seconds (default 15, 10 and 30; see Confirm timeout in \
        [the AMQP layer](../architecture.md#the-amqp-layer)); for TLS, `cacertfile`, `certfile`, `keyfile` and \
        `verify=verify_none` (local tests only). The URL may list several brokers of a cluster, comma-separated: \
        `amqp://user:pass@rabbit-0,rabbit-1:5673,rabbit-2/vhost`. A broker without a port takes the scheme's default \
        (5672, or 5671 for `amqps`). The connection starts at the first and, when a broker cannot be reached or is \
        lost, moves on to the next
        """)
    static let storeURL = Setting(
        "store.url", .secret("URL, `sqlite:<file path>` or `postgres://…` (`postgresql://…`)", default: "sqlite:.liveline/liveline.sqlite"),
        readBy: "translator, sender, api, `dlq`, `trace`, `demo`",
        """
        Where activity state, dead letters and traces live. SQLite serves one node; use \
        `postgres://user:pw@host:5432/db` for several nodes
        """)
    static let sqliteCacheMiB = Setting(
        "store.sqlite-cache-mib", .integer(1...1024, unit: "MiB", default: 2), readBy: "translator, sender, api",
        """
        Each SQLite connection's page cache. A cache fills as the file grows and stays full, so it is part of the \
        worker's steady memory, while the kernel's page cache serves the reads it would save. Raise it only where \
        a profile shows SQLite reading pages
        """)

    // MARK: The api

    static let apiHost = Setting(
        "api.host", .text("string (address)", default: "127.0.0.1"), readBy: "api",
        "The address the api listens on (containers set `0.0.0.0`)")
    static let apiPort = Setting(
        "api.port", .integer(0...65_535, unit: nil, default: 8080), readBy: "api", "The port the api listens on")
    static let jwtHS256Secret = Setting(
        "api.jwt.hs256-secret", .secret("string, at least 32 bytes", default: nil), readBy: "api",
        "The shared secret that verifies app JWTs (HS256). The api needs this key or the next one; when both are set, this one is used")
    static let jwtES256PublicKeyFile = Setting(
        "api.jwt.es256-public-key-file", .text("file path (PEM public key)", default: nil), readBy: "api",
        "The public key that verifies app JWTs (ES256)")
    static let jwtIssuer = Setting(
        "api.jwt.issuer", .text("string", default: "liveline"), readBy: "api", "The issuer (`iss`) an app JWT must have")
    static let jwtAudience = Setting(
        "api.jwt.audience", .text("string", default: "liveline-api"), readBy: "api",
        "The audience (`aud`) an app JWT must include")
    static let tokenEnvironments = Setting(
        "api.token-environments", .text("comma-separated: `production`, `sandbox`", default: "production,sandbox"),
        readBy: "api",
        """
        The APNs environments whose tokens the api takes. A production deployment that should never push to \
        development builds sets `production`; a token of another environment gets 400 (`unserved`) naming it
        """)
    static let userRequestsPerMinute = Setting(
        "api.limits.user-requests-per-minute", .integer(1...1_000_000_000, unit: nil, default: 120), readBy: "api",
        "Requests one user may make a minute (a token bucket: all at once, back over the minute). Beyond it: 429 with `Retry-After`")
    static let appRequestsPerSecond = Setting(
        "api.limits.app-requests-per-second", .integer(1...1_000_000_000, unit: nil, default: 1000), readBy: "api",
        "Requests the api takes a second from every user together, per api process. Beyond it: 429 with `Retry-After`")
    static let devicesPerUser = Setting(
        "api.limits.devices-per-user", .integer(1...1_000_000_000, unit: nil, default: 20), readBy: "api",
        """
        Devices on which one user may have push-to-start tokens (each is a push at every start). A new device \
        beyond it: 409 `too-many-devices`, nothing stored
        """)
    static let followsPerUser = Setting(
        "api.limits.follows-per-user", .integer(1...1_000_000_000, unit: nil, default: 500), readBy: "api",
        "Topics one user may follow. A new follow beyond it: 409 `too-many-follows`, nothing stored")
    static let topicKinds = Setting(
        "api.topic-kinds", .text("comma-separated words", default: "team,league,game"), readBy: "api",
        "The topic kinds users may follow (`PUT /v1/follows/<kind>:<id>`); another kind gets 404")
    static let producersFile = Setting(
        "api.producers-file", .text("file path (JSON)", default: nil), readBy: "api",
        """
        The producers that may send events over HTTPS (`POST /v1/events`): \
        `{"producers": [{"name", "keySHA256", "domains", "webhook"}]}`, each key's SHA-256, the domains it may \
        publish (`*` for all) and, optionally, the webhook its outcomes are posted to (`{"url", "secretFile"}`, \
        [producers.md](../producers.md#outcomes-what-became-of-each-event)). `liveline producer-key` makes a key \
        and prints its entry. Without it every producer gets 401
        """)
    static let maxBatchEvents = Setting(
        "api.events.max-batch-events", .integer(1...10_000, unit: nil, default: 100), readBy: "api",
        "The most events one batch to `POST /v1/events` may hold. Beyond it: 413 `batch-too-large`")
    static let maxBodyBytes = Setting(
        "api.events.max-body-bytes", .integer(1024...(64 * 1024 * 1024), unit: "bytes", default: 1024 * 1024),
        readBy: "api",
        """
        The largest `POST /v1/events` body, one event or a batch. Beyond it: 413. One event is also held to the \
        translator's limit (64 KiB)
        """)
    static let publishTimeout = Setting(
        "api.events.publish-timeout-ms", .integer(100...600_000, unit: "ms", default: 5000), readBy: "api",
        """
        How long the api waits for the broker's confirm of the events of one request. Beyond it, or with the \
        broker down: 503 with `Retry-After`
        """)
    static let webhookGiveUp = Setting(
        "api.webhooks.give-up-seconds", .integer(1...86_400, unit: "seconds", default: 600), readBy: "api",
        """
        How long the api keeps posting a batch of outcomes to a producer's webhook that fails before it gives the \
        batch up (webhooks are set in the producers file)
        """)

    // MARK: The translator and the shards

    static let bundleID = Setting(
        "translator.bundle-id", .text("string (bundle id)", default: "com.example.liveline"),
        readBy: "translator, sender, api, `publish`",
        "The bundle id of the standard ride, delivery and score domains. Not used when `liveline.translator.domains-file` is set")
    static let otherApps = Setting(
        "translator.other-apps", .text("comma-separated list of bundle ids", default: nil),
        readBy: "translator, sender, api, `publish`", defaultNote: "none",
        """
        Further apps the standard domains serve, beside `liveline.translator.bundle-id`: an event names its app with \
        the `bundleid` attribute, and each app's activities, users and topics are its own. Not used when \
        `liveline.translator.domains-file` is set (a domain lists its `apps` there)
        """)
    static let domainsFile = Setting(
        "translator.domains-file", .text("file path (JSON)", default: nil), readBy: "translator, sender, api, `publish`",
        defaultNote: "none: the standard domains",
        "A `TranslatorConfiguration` JSON with domains and policies. `publish` checks events against it")
    static let jobsPerMessage = Setting(
        "translator.jobs-per-message", .integer(1...1_000, unit: nil, default: TranslatorSettings().jobsPerMessage),
        readBy: "translator",
        """
        The most jobs of one event in one message on `liveline.push` (a bundle, see \
        [Topology](../architecture.md#topology)); 1 publishes each job alone
        """)
    static let audiencePage = Setting(
        "translator.audience-page", .integer(100...100_000, unit: "devices", default: TranslatorSettings().audiencePage),
        readBy: "translator",
        """
        Devices of a shared start's audience read and started at once: a game's start reaches its followers a page \
        at a time, so the translator's memory is one page's whatever the audience
        """)
    static let linger = Setting(
        "translator.linger-ms", .integer(0...1_000, unit: "ms", default: Int(TranslatorSettings().linger / .milliseconds(1))),
        readBy: "translator",
        """
        The longest a batch that is not full waits for more events, while they keep coming (it stops after 2 ms \
        without one). Longer costs less CPU per event at moderate rates and adds its time to the median \
        ([PERFORMANCE.md](../PERFORMANCE.md)): lower it where every millisecond counts, raise it where CPU does. \
        When the last batch waited the whole linger and still was not full, the next one waits the whole linger \
        too, reading the broker's socket once at its end instead of at every event; 0 never waits
        """)
    static let maxBatch = Setting(
        "translator.max-batch", .integer(1...1_000, unit: nil, default: TranslatorSettings().maxBatchSize),
        readBy: "translator",
        """
        The most events in one batch: one store load, one transaction, one publish. The prefetch on each \
        translate shard grows with it (six batches, at least 1,500)
        """)
    static let translateShards = Setting(
        "translate.shards", .integer(1...LivelineTopology.maximumShards, unit: nil, default: 1), readBy: everyShardUser,
        """
        The translate stage's shard count: queues `liveline.translate.<i>of<N>` behind the consistent-hash exchange \
        `liveline.translate.of<N>`. At most this many translators work; more stand by. Must equal the broker's \
        layout: a worker refuses to start otherwise. The deployments use 8 ([SCALING.md](../SCALING.md))
        """)
    static let sendShards = Setting(
        "send.shards", .integer(1...LivelineTopology.maximumShards, unit: nil, default: 1), readBy: everyShardUser,
        """
        The send stage's shard count: queues `liveline.send.<i>of<N>`, which the translator routes each job to by \
        its lane (activity and target). At most this many senders work; more stand by. Must equal the broker's \
        layout, as above
        """)

    // MARK: The sender and its apps

    static let senderPrefetchMiB = Setting(
        "sender.prefetch-mib", .integer(1...1_024, unit: "MiB", default: 2), readBy: "sender",
        """
        The most MiB of jobs the sender holds from the broker unacked (received, in flight, or waiting for their \
        trace commit); past it, it reads nothing more until acks bring it under. The broker counts its prefetch \
        in messages, and a message holds up to `liveline.translator.jobs-per-message` jobs: a game's start for \
        100,000 followers in bundles of 16 took the sender to 100 MiB under the message count alone, 60-68 MiB \
        with this bound. A flow of single jobs stays under it
        """)
    static let traceFlush = Setting(
        "sender.trace-flush-ms", .integer(1...1_000, unit: "ms", default: Int(SenderSettings().traceFlushInterval / .milliseconds(1))),
        readBy: "sender",
        """
        The longest the sender's trace lines wait for their group commit, and their jobs' acks with them (a commit \
        also comes as soon as 250 lines wait, so a full-speed sender never fills its prefetch window with jobs \
        waiting for it). Each commit on SQLite makes every other connection to the file (the translator's) read \
        its pages again, so shorter costs the translator. A sender that dies redelivers up to this long of its \
        jobs, which APNs then receives twice
        """)
    static let apps = Setting(
        "apps", .text("comma-separated list", default: nil), readBy: "sender; translator with a channel domain",
        defaultNote: "none (required)",
        "The names of the apps it pushes for (`rides,scores`). A name is lower-case letters and digits")
    static let appBundleID = Setting(
        "app.<name>.bundle-id", .text("string (bundle id)", default: nil), readBy: "sender, translator",
        defaultNote: "none (required)", "The app's bundle id (`com.example.rides`). Each app has its own")
    static let appTeamID = Setting(
        "app.<name>.team-id", .text("string, 10 upper-case letters and digits", default: nil), readBy: "sender, translator",
        defaultNote: "none (required)", "The Apple developer team id of the app's `.p8` key")
    static let appKeyID = Setting(
        "app.<name>.key-id", .text("string, 10 upper-case letters and digits", default: nil), readBy: "sender, translator",
        defaultNote: "none (required)",
        "The id of the app's `.p8` key. Apps may share a key (same key id, team and key): one provider token is then minted for all of them")
    static let appKey = Setting(
        "app.<name>.key", .secret("string (the `.p8` key's text: PKCS#8 PEM of a P-256 key)", default: nil),
        readBy: "sender, translator", defaultNote: "none (this or `key-file` required)",
        "The app's signing key; usually given as the file `liveline.app.<name>.key-file`. When both are set, this one is used")
    static let appEnvironment = Setting(
        "app.<name>.environment", .text("enum: `production`, `sandbox`", default: "production"), readBy: "sender, translator",
        "Where the app's broadcast channels live. Device tokens go to the environment they were registered with")
    static let productionEndpoint = Setting(
        "apns.production-endpoint", .text("`host:port`", default: nil), readBy: "sender, translator",
        defaultNote: "Apple's: `api.push.apple.com:443`, channel management `api-manage-broadcast.push.apple.com:2196`",
        "Another server for production pushes and channel management")
    static let sandboxEndpoint = Setting(
        "apns.sandbox-endpoint", .text("`host:port`", default: nil), readBy: "sender, translator",
        defaultNote: "Apple's: `api.sandbox.push.apple.com:443`, channel management `api-manage-broadcast.sandbox.push.apple.com:2195`",
        "Another server for sandbox pushes and channel management")
    static let endpoint = Setting(
        "apns.endpoint", .text("`host:port`", default: nil), readBy: "sender, translator",
        """
        One server that plays both environments (the simulator). A `production-endpoint` or `sandbox-endpoint` \
        wins over it for its environment. The old values `production` and `sandbox` are refused
        """)
    static let caFile = Setting(
        "apns.ca-file", .text("file path (PEM)", default: nil), readBy: "sender, translator", defaultNote: "none: system trust",
        "The CA certificates to trust for the endpoints set above; may hold several. Apple's hosts always use system trust")

    // MARK: Health and metrics

    static let opsHost = Setting(
        "ops.host", .text("string (address)", default: "127.0.0.1"), readBy: workers,
        "The address of `/metrics`, `/healthz` and `/readyz` (containers set `0.0.0.0`)")
    static let opsPort = Setting(
        "ops.port", .integer(0...65_535, unit: nil, default: nil), readBy: workers,
        defaultNote: "the role's own: `9090` for the translator, `9091` for the sender",
        """
        The port of `/metrics`, `/healthz` and `/readyz`. Each role has its own default, so a translator and a \
        sender share a host as they come; set it for a second worker of one role. A port in use stops the worker \
        at start with `liveline.ops.port: port N is already in use (LIVELINE_OPS_PORT)`
        """)
    static let stallAfter = Setting(
        "ops.stall-after-seconds", .integer(1...Int.max, unit: "seconds", default: 60), readBy: workers,
        "`/healthz` answers 503 when the loop holds work and finished none for this long")
    static let drainTimeout = Setting(
        "ops.drain-timeout-seconds", .integer(1...Int.max, unit: "seconds", default: 40), readBy: workers,
        """
        After SIGTERM or SIGINT, a drain still running this long ends the process with an error line; what was \
        not acked is requeued by the broker (duplicates, never a loss). Keep it under the pod's termination grace
        """)

    // MARK: Retention

    static let traceRetention = Setting(
        "trace.retention-days", .integer(days, unit: "days", default: 7), readBy: workers,
        "Days of trace kept ([Retention](../operators.md#retention))")
    static let activityRetention = Setting(
        "retention.activity-days", .integer(days, unit: "days", default: 30), readBy: workers,
        """
        Days an activity is kept after its end (or after its start, or last event, if it never ended), with its \
        update tokens, budget and deleted channels' records
        """)
    static let pushToStartRetention = Setting(
        "retention.push-to-start-days", .integer(days, unit: "days", default: 180), readBy: workers,
        "Days a push-to-start token is kept after the app last registered it")
    static let deadLetterRetention = Setting(
        "retention.dead-letter-days", .integer(days, unit: "days", default: 90), readBy: workers,
        "Days a dead letter is kept after it last failed: longer than activities, so a late look at an incident finds its letters")
    static let auditRetention = Setting(
        "retention.audit-days", .integer(days, unit: "days", default: 365), readBy: workers,
        "Days the audit of on-call actions (`liveline audit`) is kept")
    static let followRetention = Setting(
        "retention.follow-days", .integer(days, unit: "days", default: 30), readBy: workers,
        "Days the follows of a user with no push-to-start token left are kept")
    static let eventIDRetention = Setting(
        "retention.event-id-days", .integer(days, unit: "days", default: 7), readBy: workers,
        "Days the ids of events taken over HTTPS are remembered: a producer's retry within them publishes nothing new")

    static let pruneBusyPercent = Setting(
        "retention.busy-percent", .integer(1...100, unit: "%", default: 10), readBy: workers,
        """
        The most of a worker's time its prune may spend deleting: after each batch it pauses long enough to keep to \
        it (nine times the batch's time at 10 %), so a backlog of millions of rows yields to the workers' own writes
        """)

    // MARK: Outcomes, channels, dead letters and retries

    static let outcomeDomains = Setting(
        "outcomes.domains", .text("comma-separated domain names, or `*`", default: nil),
        readBy: "translator, sender, on-call",
        """
        Domains whose events' outcomes are published to `liveline.outcomes` \
        ([producers.md](../producers.md#outcomes-what-became-of-each-event)); a name that is not a configured \
        domain stops the worker at start
        """)
    static let sweepOrphans = Setting(
        "channels.sweep-orphans", .flag(default: true), readBy: "sender with a channel domain",
        """
        At start, delete the channels this deployment created at APNs and no longer knows live. Never another \
        deployment's: each channel is noted in the store that created it
        """)
    static let keeperEnabled = Setting(
        "keeper.enabled", .flag(default: true), readBy: "sender",
        "The sender also runs the dead-letter keeper. With `false`, run `liveline dlq keep` somewhere")
    static let retryDelays = Setting(
        "retry.delays-seconds",
        .text(
            "comma-separated list of seconds (whole, at least 1, rising); a string in the JSON file too",
            default: LivelineTopology.RetryTier.defaults.map { "\($0.delay.components.seconds)" }.joined(separator: ",")),
        readBy: workers,
        """
        The retry tiers. A job that fails transiently waits in each in turn (queues `liveline.retry.5s`, \
        `liveline.retry.2m`, …), then is dead-lettered `retries-exhausted`. Give every worker the same list; \
        `deploy/rabbitmq/definitions.json` declares the default tiers
        """)
}
