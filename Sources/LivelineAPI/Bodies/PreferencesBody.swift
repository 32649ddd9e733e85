// Tests: Tests/LivelineAPITests/ActivityRouteTests.swift

/// `PUT /v1/preferences` and its `GET` answer.
struct PreferencesBody: Codable {
    var activitiesEnabled: Bool
    var frequentPushesEnabled: Bool
}
