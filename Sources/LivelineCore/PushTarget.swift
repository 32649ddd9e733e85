import LivelineModels

// Tests: Tests/LivelineCoreTests/PushJobTests.swift, Tests/LivelineCoreTests/TargetingTests.swift

/// Where one push goes.
///
/// JSON (in a push job): `{"device": {"token": "<hex>", "kind": "update", "environment":
/// "sandbox"}}` (`environment` absent for production) or `{"channel": {"key": "<activity id>"}}`.
public enum PushTarget: Hashable, Sendable {
    /// A device token: `POST /3/device/<token>` on the host of the token's environment.
    case device(token: String, kind: DeviceTokenKind, environment: APNsEnvironment = .production)
    /// The broadcast channel of (the job's domain, `key`), one per activity, e.g. per game:
    /// `POST /4/broadcasts/apps/<bundleId>` with its `apns-channel-id`. The sender looks the
    /// channel up, opens it at APNs on first use and deletes it after the end, so the
    /// translator never needs to know its id.
    case channel(key: String)

    /// The kind of a device token.
    public enum DeviceTokenKind: String, Hashable, Sendable {
        /// A per-activity update token.
        case update
        /// A per-attributes-type push-to-start token, used for every start until the app
        /// replaces it.
        case pushToStart
    }

    /// The sender's lane for this target's pushes of `activity`: ActivityKit orders each
    /// device's pushes, so pushes to one target go in order, while the devices of one
    /// activity (a game's whole audience) are sent to in parallel. A token is named by a
    /// 64-bit FNV-1a hash, the same in every process and no token in a header; two tokens
    /// that share a hash merely share a lane.
    public func laneKey(activity: String) -> String {
        switch self {
        case .device(let token, let kind, _):
            var token = DeviceToken.lowercased(token)
            let hash = token.withUTF8 { bytes in
                bytes.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { hash, byte in (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
            }
            // One string, sized once: joining the four pieces made a string of each join.
            let hex = String(hash, radix: 16)
            var key = ""
            key.reserveCapacity(activity.utf8.count + kind.rawValue.utf8.count + hex.utf8.count + 2)
            key += activity
            key += "\n"
            key += kind.rawValue
            key += ":"
            key += hex
            return key
        case .channel:
            return "\(activity)\nchannel"
        }
    }

    /// A log-safe form: device tokens shortened to 8 characters (DESIGN §7).
    public var logDescription: String {
        var text = ""
        writeLogDescription(to: &text)
        return text
    }

    /// Appends ``logDescription`` to `text`, for a line built in one piece (a trace line per push).
    public func writeLogDescription(to text: inout String) {
        switch self {
        case .device(let token, let kind, let environment):
            if environment == .sandbox { text += "sandbox " }
            text += kind.rawValue
            text += " token "
            text += Substring(token.unicodeScalars.prefix(8))  // hex: no need to walk grapheme clusters
            text += "…"
        case .channel(let key):
            text += "channel "
            text += key
        }
    }
}
