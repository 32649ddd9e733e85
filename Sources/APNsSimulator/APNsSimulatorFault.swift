// Tests: none needed (declarations only)

/// A misbehaviour the simulator can be told to show, per device token or at random.
public enum APNsSimulatorFault: Sendable, Hashable {
    /// 410 Unregistered with `timestamp` = now (ms).
    case unregistered
    /// 400 BadDeviceToken.
    case badDeviceToken
    /// 400 DeviceTokenNotForTopic.
    case deviceTokenNotForTopic
    /// 429 TooManyRequests.
    case tooManyRequests
    /// 500 InternalServerError.
    case internalServerError
    /// 503 ServiceUnavailable.
    case serviceUnavailable
    /// 403 ExpiredProviderToken, whatever the token's age.
    case expiredProviderToken
    /// Any status with any reason.
    case status(Int, reason: String)
    /// Answer normally, but only after this many milliseconds.
    case latency(milliseconds: Int)
    /// Close the whole connection (TCP) as soon as this request arrives: every stream in flight on it
    /// is lost mid-way, the request itself is never answered.
    case resetConnection
}
