import Foundation
import GRDB

// Tests: Tests/LivelineStoreTests/MigrationTests.swift

/// The SQLite schema as ordered migrations, recorded in `schema_version`.
enum SQLiteSchema {
    struct Migration {
        let version: Int
        let sql: String
        /// Then the rewrite of ids as app keys (``AppKeyMigration``), which needs the layout.
        var keysApps = false
    }

    /// Append only: a released migration is never edited.
    static let migrations: [Migration] = [
        Migration(version: 1, sql: """
            CREATE TABLE activities (
                id TEXT PRIMARY KEY NOT NULL,
                domain TEXT NOT NULL,
                attributes_type TEXT NOT NULL,
                user_id TEXT NOT NULL,
                attributes TEXT,
                content_state TEXT,
                last_event_ms INTEGER,
                started_ms INTEGER,
                ended_ms INTEGER,
                end_reason TEXT,
                budget_spent INTEGER NOT NULL DEFAULT 0,
                budget_window_ms INTEGER
            ) WITHOUT ROWID;
            CREATE TABLE update_tokens (
                activity_id TEXT NOT NULL,
                device_id TEXT NOT NULL,
                token TEXT NOT NULL,
                registered_ms INTEGER NOT NULL,
                PRIMARY KEY (activity_id, device_id)
            ) WITHOUT ROWID;
            CREATE INDEX update_tokens_token ON update_tokens (token);
            CREATE TABLE push_to_start_tokens (
                user_id TEXT NOT NULL,
                attributes_type TEXT NOT NULL,
                token TEXT NOT NULL,
                registered_ms INTEGER NOT NULL,
                used_ms INTEGER,
                PRIMARY KEY (user_id, attributes_type)
            ) WITHOUT ROWID;
            CREATE INDEX push_to_start_tokens_token ON push_to_start_tokens (token);
            CREATE TABLE preferences (
                user_id TEXT PRIMARY KEY NOT NULL,
                activities_enabled INTEGER NOT NULL,
                frequent_pushes_enabled INTEGER NOT NULL
            ) WITHOUT ROWID;
            CREATE TABLE channels (
                domain TEXT NOT NULL,
                key TEXT NOT NULL,
                channel_id TEXT NOT NULL,
                created_ms INTEGER NOT NULL,
                deleted_ms INTEGER,
                PRIMARY KEY (domain, key)
            ) WITHOUT ROWID;
            CREATE TABLE activity_trace (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                activity_id TEXT NOT NULL,
                at_ms INTEGER NOT NULL,
                kind TEXT NOT NULL,
                detail TEXT NOT NULL
            );
            CREATE INDEX activity_trace_activity ON activity_trace (activity_id, at_ms);
            CREATE INDEX activity_trace_at ON activity_trace (at_ms);
            """),
        // What the translator needs to tell a duplicate from a stale event, a repeated
        // status from a new one, and the aps.timestamp it last sent (ActivityRecord).
        Migration(version: 2, sql: """
            ALTER TABLE activities ADD COLUMN last_event_id TEXT;
            ALTER TABLE activities ADD COLUMN last_status TEXT;
            ALTER TABLE activities ADD COLUMN last_push_s INTEGER;
            ALTER TABLE activities ADD COLUMN push_to_start_sent_ms INTEGER;
            """),
        // The on-call view of the dead-letter queue (DeadLetterStore): the keeper moves each
        // letter here, and `liveline dlq` filters, replays and purges without touching the queue.
        Migration(version: 3, sql: """
            CREATE TABLE dead_letters (
                id TEXT PRIMARY KEY NOT NULL,
                reason TEXT NOT NULL,
                source TEXT NOT NULL,
                message TEXT NOT NULL,
                domain TEXT,
                activity_id TEXT,
                event_id TEXT,
                job_id TEXT,
                payload_kind TEXT NOT NULL,
                body BLOB NOT NULL,
                routing_key TEXT NOT NULL,
                attempts INTEGER NOT NULL,
                first_failed_ms INTEGER NOT NULL,
                last_failed_ms INTEGER NOT NULL,
                kept_ms INTEGER NOT NULL,
                deaths TEXT NOT NULL,
                resolution TEXT,
                resolved_ms INTEGER,
                resolved_count INTEGER NOT NULL DEFAULT 0,
                claim TEXT,
                claim_ms INTEGER
            );
            CREATE INDEX dead_letters_time ON dead_letters (last_failed_ms);
            CREATE INDEX dead_letters_reason ON dead_letters (reason, last_failed_ms);
            CREATE INDEX dead_letters_domain ON dead_letters (domain, last_failed_ms);
            CREATE INDEX dead_letters_activity ON dead_letters (activity_id, last_failed_ms);
            """),
        // Each token's APNs environment (APNsEnvironment): a development build's token goes
        // to the sandbox host. Rows from before were registered for production.
        Migration(version: 4, sql: """
            ALTER TABLE update_tokens ADD COLUMN environment TEXT NOT NULL DEFAULT 'production';
            ALTER TABLE push_to_start_tokens ADD COLUMN environment TEXT NOT NULL DEFAULT 'production';
            """),
        // Push-to-start tokens per device (every device of a user can be started, each once),
        // with the device's iOS version for the broadcast gate; and the topics users follow.
        // Tokens registered before were one per user and type: they become device 'default'.
        Migration(version: 5, sql: """
            CREATE TABLE push_to_start_devices (
                user_id TEXT NOT NULL,
                attributes_type TEXT NOT NULL,
                device_id TEXT NOT NULL,
                token TEXT NOT NULL,
                registered_ms INTEGER NOT NULL,
                used_ms INTEGER,
                environment TEXT NOT NULL DEFAULT 'production',
                os_version TEXT,
                PRIMARY KEY (user_id, attributes_type, device_id)
            ) WITHOUT ROWID;
            INSERT INTO push_to_start_devices (user_id, attributes_type, device_id, token, registered_ms, used_ms, environment)
                SELECT user_id, attributes_type, 'default', token, registered_ms, used_ms, environment FROM push_to_start_tokens;
            DROP TABLE push_to_start_tokens;
            ALTER TABLE push_to_start_devices RENAME TO push_to_start_tokens;
            CREATE INDEX push_to_start_tokens_token ON push_to_start_tokens (token);
            CREATE TABLE follows (
                user_id TEXT NOT NULL,
                topic TEXT NOT NULL,
                followed_ms INTEGER NOT NULL,
                PRIMARY KEY (user_id, topic)
            ) WITHOUT ROWID;
            CREATE INDEX follows_topic ON follows (topic, user_id);
            """),
        // The topics a shared activity's start named, and the devices that came after it:
        // a fan who follows a live game's team, or registers a new device, is started late, once
        // (a row stays after its start is sent, so that a second follow does not start it again).
        Migration(version: 6, sql: """
            CREATE TABLE start_topics (
                topic TEXT NOT NULL,
                activity_id TEXT NOT NULL,
                audience_read_ms INTEGER NOT NULL,
                PRIMARY KEY (topic, activity_id)
            ) WITHOUT ROWID;
            CREATE TABLE late_starts (
                activity_id TEXT NOT NULL,
                user_id TEXT NOT NULL,
                device_id TEXT NOT NULL,
                queued_ms INTEGER NOT NULL,
                claimed_ms INTEGER,
                PRIMARY KEY (activity_id, user_id, device_id)
            ) WITHOUT ROWID;
            CREATE INDEX late_starts_waiting ON late_starts (queued_ms) WHERE claimed_ms IS NULL;
            """),
        // The channels this deployment created at APNs and has not deleted there: the only ones
        // its orphan sweep may delete, so deployments sharing an app never delete each other's.
        Migration(version: 7, sql: """
            CREATE TABLE created_channels (
                channel_id TEXT PRIMARY KEY,
                created_ms INTEGER NOT NULL
            ) WITHOUT ROWID;
            INSERT INTO created_channels (channel_id, created_ms)
                SELECT channel_id, created_ms FROM channels WHERE deleted_ms IS NULL;
            """),
        // What retention deletes by time (ActivityStore.prune): ended activities (a partial
        // index: a live activity is not in it, so its events do not maintain it) and
        // push-to-start tokens by when they were last registered.
        Migration(version: 8, sql: """
            CREATE INDEX activities_ended ON activities (ended_ms) WHERE ended_ms IS NOT NULL;
            CREATE INDEX push_to_start_tokens_registered ON push_to_start_tokens (registered_ms);
            """),
        // Who ran which on-call command, with which choices, and what it did (`liveline audit`).
        Migration(version: 9, sql: """
            CREATE TABLE audit (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                at_ms INTEGER NOT NULL,
                actor TEXT NOT NULL,
                actor_source TEXT NOT NULL,
                command TEXT NOT NULL,
                parameters TEXT NOT NULL,
                outcome TEXT NOT NULL
            );
            CREATE INDEX audit_at ON audit (at_ms);
            """),
        // The ids of events taken over HTTPS, the producers' idempotency keys, with a digest
        // of each event and whether the broker confirmed it.
        Migration(version: 10, sql: """
            CREATE TABLE event_claims (
                event_id TEXT PRIMARY KEY,
                producer TEXT NOT NULL,
                digest TEXT NOT NULL,
                received_ms INTEGER NOT NULL,
                published_ms INTEGER
            ) WITHOUT ROWID;
            CREATE INDEX event_claims_received ON event_claims (received_ms);
            """),
        // The outcomes the api heard, for a producer's GET /v1/events/{id}.
        Migration(version: 11, sql: """
            CREATE TABLE event_outcomes (
                outcome_id TEXT PRIMARY KEY,
                event_id TEXT NOT NULL,
                domain TEXT NOT NULL,
                at_ms INTEGER NOT NULL,
                body TEXT NOT NULL
            ) WITHOUT ROWID;
            CREATE INDEX event_outcomes_event ON event_outcomes (event_id, at_ms);
            CREATE INDEX event_outcomes_at ON event_outcomes (at_ms);
            """),
        // The locale and content-state version each device's app registered with its token,
        // for alerts in its language and states its app decodes. The version index is partial:
        // a full one on (attributes_type, …) was the one SQLite chose for a game's audience
        // query, sorting every follower for each page (126 µs a start instead of 12).
        Migration(version: 12, sql: """
            ALTER TABLE update_tokens ADD COLUMN locale TEXT;
            ALTER TABLE push_to_start_tokens ADD COLUMN locale TEXT;
            ALTER TABLE update_tokens ADD COLUMN content_version INTEGER;
            ALTER TABLE push_to_start_tokens ADD COLUMN content_version INTEGER;
            CREATE INDEX push_to_start_tokens_version ON push_to_start_tokens (attributes_type, content_version)
                WHERE content_version IS NOT NULL;
            """),
        // Each app's activities, users, topics and channels apart: other apps' ids than the
        // default app's become `app/id` (AppKeyMigration).
        Migration(version: 13, sql: AppKeyMigration.createTable, keysApps: true),
    ]

    static var latestVersion: Int { migrations.last?.version ?? 0 }

    /// Applies the missing migrations inside one `BEGIN IMMEDIATE` transaction, which takes the
    /// write lock first, so two processes starting at once apply each migration once.
    static func migrate(_ db: Database, apps: AppLayout = .standard) throws {
        try db.inTransaction(.immediate) {
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS schema_version (
                    version INTEGER PRIMARY KEY NOT NULL,
                    applied_ms INTEGER NOT NULL
                )
                """)
            let current = try Int.fetchOne(db, sql: "SELECT MAX(version) FROM schema_version") ?? 0
            guard current <= latestVersion else {
                throw StoreError.newerSchema("database is at schema \(current), this build knows \(latestVersion)")
            }
            for migration in migrations where migration.version > current {
                try db.execute(sql: migration.sql)
                if migration.keysApps {
                    for statement in AppKeyMigration.statements(apps) {
                        try db.execute(sql: statement.sql, arguments: SQLiteLivelineStore.arguments(statement.values))
                    }
                }
                try db.execute(
                    sql: "INSERT INTO schema_version (version, applied_ms) VALUES (?, ?)",
                    arguments: [migration.version, Date().millisecondsSince1970])
            }
            try AppKeyMigration.checkDefaultApp(apps, recorded: try String.fetchOne(db, sql: "SELECT default_app FROM store_apps"))
            return .commit
        }
    }
}
