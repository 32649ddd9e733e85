import Foundation
import LivelineStore

/// Builders that keep the tests about behaviour rather than setup.
enum Fixtures {
    /// A fixed base time, at millisecond precision like the stores.
    static let t0 = Date(millisecondsSince1970: 1_800_000_000_000)

    static func time(_ seconds: Double) -> Date {
        Date(millisecondsSince1970: t0.millisecondsSince1970 + Int64(seconds * 1000))
    }

    static func change(
        _ id: String, at seconds: Double, user: String = "u-1", state: String? = nil, end: String? = nil,
        attributes: String? = #"{"rideId":"r"}"#, started: Double? = nil
    ) -> ActivityChange {
        ActivityChange(
            activityID: id, domain: "ride", attributesType: "RideAttributes", userID: user, attributes: attributes,
            contentState: state ?? #"{"status":"at-\#(seconds)"}"#, eventTime: time(seconds),
            end: end.map { ActivityChange.End(at: time(seconds), reason: $0) }, startedAt: started.map(time))
    }

    static func token(_ seed: Int) -> String {
        String(repeating: String(format: "%08x", seed), count: 8)
    }

    static func registration(
        _ activity: String, device: String = "d-1", user: String = "u-1", token: String = token(1), at seconds: Double = 0
    ) -> UpdateTokenRegistration {
        UpdateTokenRegistration(
            activityID: activity, deviceID: device, userID: user, token: token, domain: "ride",
            attributesType: "RideAttributes", at: time(seconds))
    }
}
