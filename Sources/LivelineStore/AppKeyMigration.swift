// Tests: Tests/LivelineStoreTests/AppKeyMigrationTests.swift

/// The move of a store from before apps were kept apart into app keys (`AppKeys`): the default
/// app's ids stay as they are, and every other app's ids of activities, users, topics and
/// channels become `app/id`. Both stores run these statements, in order, in the migration's
/// transaction, with `?` placeholders bound to the values, and record the default app: a
/// deployment that later names another would read the bare ids as that app's, so the store
/// refuses to open for it (``checkDefaultApp(_:recorded:)``).
///
/// A row's app is its domain's where the row tells it: an activity and what hangs off it
/// (its update tokens, trace, topics and late starts), a channel, a dead letter, and a
/// push-to-start token by its attributes type. A user's preferences and follows name no domain
/// and stay the default app's. A store that served one app has nothing to move; nothing is
/// ever deleted. Activities are rewritten last: the other tables look their domain up first.
enum AppKeyMigration {
    static let createTable = "CREATE TABLE store_apps (default_app TEXT NOT NULL)"

    static func statements(_ apps: AppLayout) -> [(sql: String, values: [SQLValue])] {
        let record: (sql: String, values: [SQLValue]) = ("INSERT INTO store_apps (default_app) VALUES (?)", [.text(apps.defaultApp)])
        // Only the other apps' rows move: the default app's ids are their keys already.
        let byDomain = apps.appOfDomain.filter { $0.value != apps.defaultApp }.sorted { $0.key < $1.key }
        let byType = apps.appOfAttributesType.filter { $0.value != apps.defaultApp }.sorted { $0.key < $1.key }
        guard !byDomain.isEmpty || !byType.isEmpty else { return [record] }

        /// The app of `column`'s value in `map`, or NULL for the default app.
        func app(of column: String, in map: [(key: String, value: String)]) -> (sql: String, values: [SQLValue]) {
            guard !map.isEmpty else { return ("NULL", []) }
            let cases = map.map { _ in "WHEN ? THEN ?" }.joined(separator: " ")
            return ("(CASE \(column) \(cases) ELSE NULL END)", map.flatMap { [SQLValue.text($0.key), .text($0.value)] })
        }
        /// The app of the activity `column` names, or NULL.
        func appOfActivity(_ column: String) -> (sql: String, values: [SQLValue]) {
            let domain = app(of: "a.domain", in: byDomain)
            return ("(SELECT \(domain.sql) FROM activities a WHERE a.id = \(column))", domain.values)
        }
        /// `SET column = app || '/' || column` for each column, each with its app; NULL (the
        /// default app) leaves the column as it is.
        func keyed(_ table: String, _ columns: [(String, (sql: String, values: [SQLValue]))], where condition: String = "")
            -> (sql: String, values: [SQLValue])
        {
            let sets = columns.map { column, app in "\(column) = COALESCE(\(app.sql) || '/' || \(column), \(column))" }
            return ("UPDATE \(table) SET \(sets.joined(separator: ", "))\(condition)", columns.flatMap { $0.1.values })
        }

        let ofDomain = app(of: "domain", in: byDomain)
        let ofTokenActivity = appOfActivity("update_tokens.activity_id")
        let ofStart = appOfActivity("start_topics.activity_id"), ofLate = appOfActivity("late_starts.activity_id")
        return [
            record,
            // A fan's device subscribed to a shared activity is `user/device`: its user moves too.
            keyed("update_tokens", [("device_id", ofTokenActivity)], where: " WHERE device_id LIKE '%/%'"),
            keyed("update_tokens", [("activity_id", ofTokenActivity)]),
            keyed("activity_trace", [("activity_id", appOfActivity("activity_trace.activity_id"))]),
            keyed("start_topics", [("topic", ofStart), ("activity_id", ofStart)]),
            keyed("late_starts", [("user_id", ofLate), ("activity_id", ofLate)]),
            keyed("dead_letters", [("activity_id", ofDomain)], where: " WHERE activity_id IS NOT NULL"),
            keyed("channels", [("key", ofDomain)]),
            keyed("push_to_start_tokens", [("user_id", app(of: "attributes_type", in: byType))]),
            // A shared activity has no user: its empty user id stays empty.
            keyed("activities", [("user_id", ofDomain)], where: " WHERE user_id <> ''"),
            keyed("activities", [("id", ofDomain)]),
        ]
    }

    /// Refuses a default app other than the one the store's bare ids belong to.
    static func checkDefaultApp(_ apps: AppLayout, recorded: String?) throws {
        guard let recorded, recorded != apps.defaultApp else { return }
        throw StoreError.invalidArgument("""
            this store keeps the ids of app \(recorded) as they are, and would read them as \(apps.defaultApp)'s: \
            keep \(recorded) the default app (liveline.translator.bundle-id, or defaultApp in the domains file)
            """)
    }
}

/// A value bound to a `?` placeholder, which each store binds its own way.
enum SQLValue: Sendable {
    case text(String)
    case integer(Int64)
}
