// Tests: none needed (declarations only)

/// Where an HTTP/2 connection goes: host, port and how the server's certificate is trusted.
///
/// The same client talks to Apple, to the Liveline simulator or to any APNs-compatible server by
/// changing only this value.
public struct APNsEndpoint: Sendable, Hashable {
    /// How the server certificate is verified.
    public enum Trust: Sendable, Hashable {
        /// The system's CA bundle (Apple's production and sandbox hosts).
        case systemDefault
        /// A PEM file of trusted CA certificates.
        case caFile(path: String)
        /// PEM text of trusted CA certificates (e.g. the simulator's ``APNsSimulator/certificatePEM``).
        case pem(String)
        /// No TLS at all: HTTP/2 with prior knowledge (h2c). Only for a local simulator.
        case plaintext
    }

    /// DNS name or IP address.
    public var host: String
    /// TCP port.
    public var port: Int
    /// Certificate trust.
    public var trust: Trust

    public init(host: String, port: Int, trust: Trust = .systemDefault) {
        self.host = host
        self.port = port
        self.trust = trust
    }

    /// `api.push.apple.com:443`.
    public static let production = APNsEndpoint(host: "api.push.apple.com", port: 443)
    /// `api.sandbox.push.apple.com:443`.
    public static let sandbox = APNsEndpoint(host: "api.sandbox.push.apple.com", port: 443)

    // Channel management runs on its own hosts and ports, per Apple's "Sending channel management
    // requests to APNs":
    // https://developer.apple.com/documentation/usernotifications/sending-channel-management-requests-to-apns

    /// `api-manage-broadcast.push.apple.com:2196` (channel management, production).
    public static let channelManagementProduction = APNsEndpoint(
        host: "api-manage-broadcast.push.apple.com",
        port: 2196
    )
    /// `api-manage-broadcast.sandbox.push.apple.com:2195` (channel management, sandbox).
    public static let channelManagementSandbox = APNsEndpoint(
        host: "api-manage-broadcast.sandbox.push.apple.com",
        port: 2195
    )
}
