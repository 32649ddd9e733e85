/// Where one push goes.
///
/// JSON (in a push job): `{"device": {"token": "<hex>", "kind": "update"}}` or
/// `{"channel": {"id": "<base64 channel id>"}}`.
public enum PushTarget: Hashable, Sendable {
    /// A device token: `POST /3/device/<token>`.
    case device(token: String, kind: DeviceTokenKind)
    /// A broadcast channel: `POST /4/broadcasts/apps/<bundleId>` with `apns-channel-id`.
    case channel(id: String)

    /// The kind of a device token.
    public enum DeviceTokenKind: String, Hashable, Sendable {
        /// A per-activity update token.
        case update
        /// A per-attributes-type push-to-start token, consumed by use.
        case pushToStart
    }

    /// A stable text form for ids (not for logs: it holds the whole token).
    var identityText: String {
        switch self {
        case .device(let token, let kind): "device:\(kind.rawValue):\(token.lowercased())"
        case .channel(let id): "channel:\(id)"
        }
    }

    /// A log-safe form: device tokens shortened to 8 characters (DESIGN §7).
    public var logDescription: String {
        switch self {
        case .device(let token, let kind): "\(kind.rawValue) token \(token.prefix(8))…"
        case .channel(let id): "channel \(id)"
        }
    }
}
