import Foundation
import LivelineCore
import LivelineStore

// Tests: Tests/LivelineAPITests/ActivityRouteTests.swift

/// `GET /v1/activities/{activityId}`: what the app reconciles its local activity with.
struct ActivityStatusResponse: Encodable {
    var activityId: String
    var domain: String
    var attributesType: String
    var status: ActivityStatus
    var lastEventAt: Date?
    var startedAt: Date?
    var endedAt: Date?
    var endReason: String?

    /// The activity's id as its app names it, not its key.
    init(_ activity: ActivityRecord) {
        activityId = AppKeys.id(of: activity.id)
        domain = activity.domain
        attributesType = activity.attributesType
        status = activity.status
        lastEventAt = activity.lastEventAt
        startedAt = activity.startedAt
        endedAt = activity.endedAt
        endReason = activity.endReason
    }
}
