// Tests: none needed (declarations only)

/// Which activity to load, with the event's user and attributes type so the push-to-start
/// token and preferences are found even before the activity's first row exists.
public struct SnapshotRequest: Sendable, Hashable {
    public var activityID: String
    public var userID: String
    public var attributesType: String

    public init(activityID: String, userID: String, attributesType: String) {
        self.activityID = activityID
        self.userID = userID
        self.attributesType = attributesType
    }
}
