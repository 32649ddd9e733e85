import Foundation
import LivelineCore
import LivelineModels
import Logging
import PostgresNIO

// Tests: Tests/LivelineStoreTests/SnapshotConformanceTests.swift

extension PostgresLivelineStore {
    public func loadSnapshots(_ requests: [SnapshotRequest], whileWriting _: Bool) async throws -> [String: StoredActivity] {
        var seen = Set<String>()
        let unique = requests.filter { seen.insert($0.activityID).inserted }
        guard !unique.isEmpty else { return [:] }
        let ids = unique.map(\.activityID)
        let users = unique.map(\.userID)
        let types = unique.map(\.attributesType)
        // One round-trip: the tokens come back as parallel arrays ordered by device id.
        let query: PostgresQuery = """
            SELECT i.id, i.user_id, i.attributes_type,
                   a.domain, a.attributes_type, a.user_id, a.attributes, a.content_state, a.last_event_ms,
                   a.started_ms, a.ended_ms, a.end_reason, a.budget_spent, a.budget_window_ms,
                   a.last_event_id, a.last_status, a.last_push_s, a.push_to_start_sent_ms,
                   ARRAY(SELECT t.device_id FROM update_tokens t WHERE t.activity_id = i.id ORDER BY t.device_id),
                   ARRAY(SELECT t.token FROM update_tokens t WHERE t.activity_id = i.id ORDER BY t.device_id),
                   ARRAY(SELECT t.registered_ms FROM update_tokens t WHERE t.activity_id = i.id ORDER BY t.device_id),
                   ARRAY(SELECT t.environment FROM update_tokens t WHERE t.activity_id = i.id ORDER BY t.device_id),
                   ARRAY(SELECT COALESCE(t.locale, '') FROM update_tokens t WHERE t.activity_id = i.id ORDER BY t.device_id),
                   ARRAY(SELECT COALESCE(t.content_version, 0) FROM update_tokens t WHERE t.activity_id = i.id ORDER BY t.device_id),
                   ARRAY(SELECT p.device_id FROM push_to_start_tokens p \(unescaped: Self.userStarts)),
                   ARRAY(SELECT p.token FROM push_to_start_tokens p \(unescaped: Self.userStarts)),
                   ARRAY(SELECT p.registered_ms FROM push_to_start_tokens p \(unescaped: Self.userStarts)),
                   ARRAY(SELECT p.environment FROM push_to_start_tokens p \(unescaped: Self.userStarts)),
                   ARRAY(SELECT COALESCE(p.os_version, '') FROM push_to_start_tokens p \(unescaped: Self.userStarts)),
                   ARRAY(SELECT COALESCE(p.locale, '') FROM push_to_start_tokens p \(unescaped: Self.userStarts)),
                   ARRAY(SELECT COALESCE(p.content_version, 0) FROM push_to_start_tokens p \(unescaped: Self.userStarts)),
                   pr.activities_enabled, pr.frequent_pushes_enabled
            FROM unnest(\(ids)::text[], \(users)::text[], \(types)::text[]) AS i(id, user_id, attributes_type)
            LEFT JOIN activities a ON a.id = i.id
            LEFT JOIN preferences pr ON pr.user_id = i.user_id
            """
        var snapshots: [String: StoredActivity] = [:]
        snapshots.reserveCapacity(unique.count)
        for row in try await self.query(query).rows {
            let (id, userID, attributesType,
                 domain, type, owner, attributes, contentState, lastEvent, started, ended, endReason, spent, window,
                 lastEventID, lastStatus, lastPush, startSent,
                 deviceIDs, tokens, registered, environments, locales, versions,
                 startDevices, startTokens, startRegistered, startEnvironments, startOS, startLocales, startVersions,
                 enabled, frequent) = try row.decode(
                (String, String, String,
                 String?, String?, String?, String?, String?, Int64?, Int64?, Int64?, String?, Int64?, Int64?,
                 String?, String?, Int64?, Int64?,
                 [String], [String], [Int64], [String], [String], [Int64],
                 [String], [String], [Int64], [String], [String], [String], [Int64], Bool?, Bool?).self)
            var activity: ActivityRecord?
            if let domain, let type, let owner {
                activity = ActivityRecord(
                    id: id, domain: domain, attributesType: type, userID: owner, attributes: attributes,
                    contentState: contentState, lastEventAt: Date(millisecondsSince1970: lastEvent),
                    startedAt: Date(millisecondsSince1970: started), endedAt: Date(millisecondsSince1970: ended),
                    endReason: endReason,
                    budget: PriorityBudget(spent: Int(spent ?? 0), windowStart: Date(millisecondsSince1970: window)),
                    lastEventID: lastEventID, lastStatus: lastStatus, lastPushTimestamp: lastPush,
                    pushToStartSentAt: Date(millisecondsSince1970: startSent))
            }
            var updateTokens: [UpdateToken] = []
            if let activity, !(activity.status == .pending && activity.userID != userID) {
                for index in deviceIDs.indices {
                    updateTokens.append(UpdateToken(
                        activityID: id, deviceID: deviceIDs[index], token: tokens[index],
                        registeredAt: Date(millisecondsSince1970: registered[index]),
                        environment: APNsEnvironment(stored: environments[index]),
                        locale: locales[index].isEmpty ? nil : locales[index],
                        contentVersion: versions[index] == 0 ? nil : Int(versions[index])))
                }
            }
            let pushToStart = startDevices.indices.map { index in
                PushToStartToken(
                    userID: userID, attributesType: attributesType, deviceID: startDevices[index], token: startTokens[index],
                    registeredAt: Date(millisecondsSince1970: startRegistered[index]),
                    environment: APNsEnvironment(stored: startEnvironments[index]),
                    osVersion: startOS[index].isEmpty ? nil : startOS[index],
                    locale: startLocales[index].isEmpty ? nil : startLocales[index],
                    contentVersion: startVersions[index] == 0 ? nil : Int(startVersions[index]))
            }
            let preferences = enabled.map { UserPreferences(activitiesEnabled: $0, frequentPushesEnabled: frequent ?? false) }
            snapshots[id] = StoredActivity(
                activity: activity, updateTokens: updateTokens, pushToStartTokens: pushToStart,
                preferences: preferences ?? .defaults)
        }
        return snapshots
    }

    /// The request's user's push-to-start tokens for its type, ordered by device.
    private static let userStarts =
        "WHERE p.user_id = i.user_id AND p.attributes_type = i.attributes_type ORDER BY p.device_id"
}
