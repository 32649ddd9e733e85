// Tests: Tests/LivelineStoreTests/TokenConformanceTests.swift

/// How many devices registered a token of one kind with one content-state version and locale,
/// for one ActivityKit type: what tells a team when an old app version can be dropped.
public struct TokenRegistrations: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Hashable, Codable {
        case update
        case pushToStart
    }

    public var attributesType: String
    public var kind: Kind
    /// The content-state version the apps declared; nil for those that declared none.
    public var contentVersion: Int?
    /// The locale the apps registered; nil for those that registered none.
    public var locale: String?
    public var devices: Int

    public init(attributesType: String, kind: Kind, contentVersion: Int?, locale: String?, devices: Int) {
        self.attributesType = attributesType
        self.kind = kind
        self.contentVersion = contentVersion
        self.locale = locale
        self.devices = devices
    }
}
