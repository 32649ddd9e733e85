/// `PUT /v1/activities/{activityId}/tokens/{deviceId}`.
struct UpdateTokenBody: Decodable {
    /// Hex, from `Activity.pushTokenUpdates`.
    var token: String
    /// Recorded if this registration creates the activity's row.
    var domain: String?
    /// Recorded if this registration creates the activity's row.
    var attributesType: String?
}
