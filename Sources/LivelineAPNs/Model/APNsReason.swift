// Tests: Tests/LivelineAPNsTests/ModelTests.swift

/// The `reason` string APNs puts in the JSON body of an error response.
///
/// Every reason documented by Apple for device pushes ("Handling notification responses from APNs"),
/// broadcast pushes and channel management is a case; anything else is kept verbatim in ``unknown(_:)``
/// so a new reason never breaks decoding.
public enum APNsReason: Hashable, Sendable, CustomStringConvertible {
    // 400
    case badCollapseID
    case badDeviceToken
    case badExpirationDate
    case badMessageID
    case badPriority
    case badTopic
    case deviceTokenNotForTopic
    case duplicateHeaders
    case idleTimeout
    case invalidPushType
    case missingDeviceToken
    case missingTopic
    case payloadEmpty
    case topicDisallowed
    // 403
    case badCertificate
    case badCertificateEnvironment
    case expiredProviderToken
    case forbidden
    case invalidProviderToken
    case missingProviderToken
    case unrelatedKeyIDInToken
    case badEnvironmentKeyIDInToken
    // 404, 405
    case badPath
    case methodNotAllowed
    // 410
    case expiredToken
    case unregistered
    // 413
    case payloadTooLarge
    // 429
    case tooManyProviderTokenUpdates
    case tooManyRequests
    // 500, 503
    case internalServerError
    case serviceUnavailable
    case shutdown
    // Broadcast and channel management (iOS 18).
    case badChannelID
    case missingChannelID
    case channelNotRegistered
    case cannotCreateChannelConfig
    case invalidPolicy
    case missingPushType
    case featureNotEnabled
    case badRequest
    /// A reason this library does not know yet, verbatim.
    case unknown(String)

    private static let table: [(APNsReason, String)] = [
        (.badCollapseID, "BadCollapseId"),
        (.badDeviceToken, "BadDeviceToken"),
        (.badExpirationDate, "BadExpirationDate"),
        (.badMessageID, "BadMessageId"),
        (.badPriority, "BadPriority"),
        (.badTopic, "BadTopic"),
        (.deviceTokenNotForTopic, "DeviceTokenNotForTopic"),
        (.duplicateHeaders, "DuplicateHeaders"),
        (.idleTimeout, "IdleTimeout"),
        (.invalidPushType, "InvalidPushType"),
        (.missingDeviceToken, "MissingDeviceToken"),
        (.missingTopic, "MissingTopic"),
        (.payloadEmpty, "PayloadEmpty"),
        (.topicDisallowed, "TopicDisallowed"),
        (.badCertificate, "BadCertificate"),
        (.badCertificateEnvironment, "BadCertificateEnvironment"),
        (.expiredProviderToken, "ExpiredProviderToken"),
        (.forbidden, "Forbidden"),
        (.invalidProviderToken, "InvalidProviderToken"),
        (.missingProviderToken, "MissingProviderToken"),
        (.unrelatedKeyIDInToken, "UnrelatedKeyIdInToken"),
        (.badEnvironmentKeyIDInToken, "BadEnvironmentKeyIdInToken"),
        (.badPath, "BadPath"),
        (.methodNotAllowed, "MethodNotAllowed"),
        (.expiredToken, "ExpiredToken"),
        (.unregistered, "Unregistered"),
        (.payloadTooLarge, "PayloadTooLarge"),
        (.tooManyProviderTokenUpdates, "TooManyProviderTokenUpdates"),
        (.tooManyRequests, "TooManyRequests"),
        (.internalServerError, "InternalServerError"),
        (.serviceUnavailable, "ServiceUnavailable"),
        (.shutdown, "Shutdown"),
        (.badChannelID, "BadChannelId"),
        (.missingChannelID, "MissingChannelId"),
        (.channelNotRegistered, "ChannelNotRegistered"),
        (.cannotCreateChannelConfig, "CannotCreateChannelConfig"),
        (.invalidPolicy, "InvalidPolicy"),
        (.missingPushType, "MissingPushType"),
        (.featureNotEnabled, "FeatureNotEnabled"),
        (.badRequest, "BadRequest"),
    ]

    private static let byName: [String: APNsReason] = Dictionary(
        uniqueKeysWithValues: table.map { ($0.1, $0.0) }
    )

    /// Every reason this library knows, for exhaustive tests and tooling (the simulator uses it too).
    public static var allKnown: [APNsReason] { table.map(\.0) }

    /// Decodes the wire string; unknown strings become ``unknown(_:)``.
    public init(rawValue: String) {
        self = Self.byName[rawValue] ?? .unknown(rawValue)
    }

    /// The exact string APNs sends.
    public var rawValue: String {
        if case .unknown(let raw) = self { return raw }
        return Self.table.first { $0.0 == self }!.1
    }

    public var description: String { rawValue }
}
