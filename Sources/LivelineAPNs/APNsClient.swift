import Foundation
import LivelineCodecs
import LivelineHTTP2
import Logging
import NIOCore
import NIOHPACK
import NIOPosix

// Tests: Tests/LivelineAPNsTests/DevicePushTests.swift, Tests/LivelineAPNsTests/BroadcastTests.swift, Tests/LivelineAPNsTests/ConnectionTests.swift

/// Sends Live Activity pushes, broadcasts and channel management requests for **one app**.
///
/// One app = one bundle id, team, signing key and environment. A process serving several apps creates
/// one `APNsClient` per app, all sharing one `EventLoopGroup`: each client then has its own token and
/// its own connection pool, so one app's provider-token trouble or GOAWAY never stalls another's.
///
/// Creating a client opens nothing: connections are opened lazily by the first requests and kept
/// open until ``shutdown()``.
public final class APNsClient: Sendable {
    /// The app this client pushes for.
    public let bundleID: String
    /// `<bundleID>.push-type.liveactivity`.
    public let liveActivityTopic: String
    /// The provider token source; exposed so operators can see the mint count and tests can inspect it.
    public let tokenSigner: APNsTokenSigner

    private let endpoint: APNsEndpoint
    private let channelManagementEndpoint: APNsEndpoint
    private let pushPool: HTTP2ConnectionPool
    private let channelPool: HTTP2ConnectionPool

    /// The push connections now: how many are open, and whether opening them keeps failing
    /// (a wrong CA, a refused port), for `/readyz`.
    public var connectionStatus: APNsConnectionStatus { pushPool.connectionStatus }
    private let maximumUnprocessedRetries: Int
    private let logger: Logger
    private let allocator = ByteBufferAllocator()

    /// - Parameters:
    ///   - configuration: app credentials, endpoints and pool settings.
    ///   - eventLoopGroup: shared by every client of the process; defaults to NIO's singleton.
    ///   - clock: wall clock for provider tokens (inject ``ManualWallClock`` in tests).
    ///   - tokenSigner: a signer shared with the other clients of the same key (other apps of
    ///     the team, the other environment), so one provider token is minted per key; nil
    ///     makes one from the configuration's key.
    ///   - logger: never receives the key, the token, or a full device token.
    public init(
        configuration: APNsClientConfiguration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        clock: any WallClock = SystemWallClock(),
        tokenSigner: APNsTokenSigner? = nil,
        logger: Logger = Logger(label: "liveline.apns")
    ) throws {
        self.bundleID = configuration.bundleID
        self.liveActivityTopic = configuration.liveActivityTopic
        self.tokenSigner = try tokenSigner ?? APNsTokenSigner(
            teamID: configuration.teamID,
            keyID: configuration.keyID,
            privateKeyPEM: configuration.privateKeyPEM,
            clock: clock
        )
        self.endpoint = configuration.endpoint
        self.channelManagementEndpoint = configuration.channelManagementEndpoint
        var logger = logger
        logger[APNsLogKey.bundleID] = "\(configuration.bundleID)"
        self.logger = logger
        self.pushPool = try HTTP2ConnectionPool(
            endpoint: configuration.endpoint,
            group: eventLoopGroup,
            configuration: configuration.pool,
            logger: logger
        )
        // Channel management is rare; one connection is plenty.
        var managementPool = configuration.pool
        managementPool.maximumConnections = 1
        self.channelPool = try HTTP2ConnectionPool(
            endpoint: configuration.channelManagementEndpoint,
            group: eventLoopGroup,
            configuration: managementPool,
            logger: logger
        )
        self.maximumUnprocessedRetries = configuration.pool.maximumUnprocessedRetries
    }

    /// Closes every connection. Requests still waiting for a stream fail with a retriable error.
    public func shutdown() async {
        await pushPool.shutdown()
        await channelPool.shutdown()
    }

    // MARK: Device pushes

    /// Sends one Live Activity push.
    ///
    /// - Returns: the echoed `apns-id` on 200.
    /// - Throws: ``APNsError`` whose ``APNsError/outcome`` says what to do. A 403 ExpiredProviderToken is
    ///   answered internally by one token refresh and one retry (when the 20-minute floor allows a
    ///   refresh); only if that is impossible or fails again does the caller see `.providerToken`.
    public func send(_ push: APNsLiveActivityPush) async throws(APNsError) -> APNsResponse {
        // The token goes into :path and header validation is off on our connections, so anything but
        // hex is refused here; the length is left for APNs to judge.
        guard Hex.isHex(push.deviceToken) else {
            throw APNsError(
                outcome: .tokenInvalid,
                status: nil,
                reason: .badDeviceToken,
                apnsID: push.apnsID.hyphenated(),
                timestamp: nil,
                detail: "device token is not hex; not sent"
            )
        }
        var headers = HeaderFields()
        // Room for every header below and the authorization `perform` adds: grown one at a
        // time, the array was reallocated and copied four times per push (1.5 % of the sender).
        headers.reserveCapacity(11)
        headers.add(.method, "POST")
        headers.add(.scheme, endpoint.trust == .plaintext ? "http" : "https")
        // Values unique to one push stay out of the HPACK dynamic table: indexing them would only
        // evict the ones that repeat (topic, authorization) and slow every table lookup.
        headers.add(.path, "/3/device/" + push.deviceToken, indexing: .nonIndexable)
        headers.add(.authority, endpoint.host)
        headers.add(.apnsPushType, "liveactivity")
        headers.add(.apnsTopic, liveActivityTopic)
        headers.add(.apnsPriority, push.priority == .high ? "10" : "5")
        if let expiration = push.expiration {
            headers.add(.apnsExpiration, expiration.headerValue, indexing: .nonIndexable)
        }
        headers.add(.apnsId, push.apnsID.hyphenated(), indexing: .nonIndexable)
        if let collapseID = push.collapseID {
            headers.add(.apnsCollapseId, collapseID)
        }
        let body = allocator.buffer(bytes: push.payload)
        let response = try await perform(pool: pushPool, headers: consume headers, body: body)
        return try successOrThrow(response, idHeader: "apns-id")
    }

    // MARK: Broadcast (iOS 18)

    /// Sends one broadcast push to a channel: `POST /4/broadcasts/apps/<bundle id>` on the push host.
    ///
    /// Per Apple's "Sending broadcast push notification requests to APNs"
    /// (https://developer.apple.com/documentation/usernotifications/sending-broadcast-push-notification-requests-to-apns).
    public func broadcast(_ push: APNsBroadcastPush) async throws(APNsError) -> APNsResponse {
        var headers = HeaderFields()
        headers.add(.method, "POST")
        headers.add(.scheme, endpoint.trust == .plaintext ? "http" : "https")
        headers.add(.path, "/4/broadcasts/apps/" + bundleID)
        headers.add(.authority, endpoint.host)
        headers.add(.apnsChannelId, push.channelID)
        headers.add(.apnsPushType, "liveactivity")
        headers.add(.apnsPriority, push.priority == .high ? "10" : "5")
        if let expiration = push.expiration {
            headers.add(.apnsExpiration, expiration.headerValue)
        }
        headers.add(.apnsRequestId, push.requestID.hyphenated(), indexing: .nonIndexable)
        let body = allocator.buffer(bytes: push.payload)
        let response = try await perform(pool: pushPool, headers: consume headers, body: body)
        return try successOrThrow(response, idHeader: "apns-request-id")
    }

    // MARK: Channel management (iOS 18)
    //
    // Paths and hosts follow Apple's "Sending channel management requests to APNs"
    // (https://developer.apple.com/documentation/usernotifications/sending-channel-management-requests-to-apns):
    //   create:   POST   /1/apps/<bundle id>/channels      body {"message-storage-policy":N,"push-type":"LiveActivity"}
    //             → 201, channel id in the `apns-channel-id` response header
    //   read:     GET    /1/apps/<bundle id>/channels      with `apns-channel-id` → 200, body with the policy
    //   read all: GET    /1/apps/<bundle id>/all-channels  → 200, body {"channels":[…]}
    //   delete:   DELETE /1/apps/<bundle id>/channels      with `apns-channel-id` → 204
    // on api-manage-broadcast(.sandbox).push.apple.com, ports 2196 (production) and 2195 (sandbox).
    // Some open-source clients put the channel id in the path for read/delete, or list with a bare GET on
    // /channels; Apple's text uses the `apns-channel-id` header and a separate `all-channels` path.
    // Hosts, ports, the create body and header-based delete also match several independent
    // implementations; `all-channels` rests on Apple's article alone.

    /// Creates a channel and returns its id (`apns-channel-id`).
    public func createChannel(
        storagePolicy: APNsMessageStoragePolicy = .noMessageStored,
        requestID: UUID = UUID()
    ) async throws(APNsError) -> String {
        let json = #"{"message-storage-policy":\#(storagePolicy.rawValue),"push-type":"LiveActivity"}"#
        let response = try await management(
            method: "POST",
            path: "/1/apps/\(bundleID)/channels",
            channelID: nil,
            body: Array(json.utf8),
            requestID: requestID
        )
        guard let channelID = response.headers.first(name: "apns-channel-id") else {
            throw APNsError(
                outcome: .retriable,
                status: response.status,
                reason: nil,
                apnsID: response.headers.first(name: "apns-request-id"),
                timestamp: nil,
                detail: "create channel answered without apns-channel-id"
            )
        }
        return channelID
    }

    /// Reads a channel's configuration.
    public func channelConfiguration(id channelID: String, requestID: UUID = UUID()) async throws(APNsError) -> APNsChannelConfiguration {
        let response = try await management(
            method: "GET",
            path: "/1/apps/\(bundleID)/channels",
            channelID: channelID,
            body: nil,
            requestID: requestID
        )
        struct Body: Decodable {
            var messageStoragePolicy: Int?
            var pushType: String?
            enum CodingKeys: String, CodingKey {
                case messageStoragePolicy = "message-storage-policy"
                case pushType = "push-type"
            }
        }
        let decoded = response.body.flatMap { try? JSONDecoder().decode(Body.self, from: Data($0.readableBytesView)) }
        return APNsChannelConfiguration(
            channelID: channelID,
            storagePolicy: APNsMessageStoragePolicy(rawValue: decoded?.messageStoragePolicy ?? 0) ?? .noMessageStored,
            pushType: decoded?.pushType ?? "LiveActivity"
        )
    }

    /// Lists the ids of every channel of the app.
    public func allChannelIDs(requestID: UUID = UUID()) async throws(APNsError) -> [String] {
        let response = try await management(
            method: "GET",
            path: "/1/apps/\(bundleID)/all-channels",
            channelID: nil,
            body: nil,
            requestID: requestID
        )
        struct Body: Decodable { var channels: [String] }
        return response.body.flatMap { try? JSONDecoder().decode(Body.self, from: Data($0.readableBytesView)) }?.channels ?? []
    }

    /// Deletes a channel. Broadcasts to it fail afterwards.
    public func deleteChannel(id channelID: String, requestID: UUID = UUID()) async throws(APNsError) {
        _ = try await management(
            method: "DELETE",
            path: "/1/apps/\(bundleID)/channels",
            channelID: channelID,
            body: nil,
            requestID: requestID
        )
    }

    private func management(
        method: String,
        path: String,
        channelID: String?,
        body: [UInt8]?,
        requestID: UUID
    ) async throws(APNsError) -> HTTP2Response {
        var headers = HeaderFields()
        headers.add(.method, method)
        headers.add(.scheme, channelManagementEndpoint.trust == .plaintext ? "http" : "https")
        headers.add(.path, path)
        headers.add(.authority, channelManagementEndpoint.host)
        headers.add(.apnsRequestId, requestID.uuidString)
        if let channelID {
            headers.add(.apnsChannelId, channelID)
        }
        let buffer = body.map { allocator.buffer(bytes: $0) }
        let response = try await perform(pool: channelPool, headers: consume headers, body: buffer)
        _ = try successOrThrow(response, idHeader: "apns-request-id")
        return response
    }

    // MARK: Transport

    /// Adds the provider token, leases a stream and sends, moving the request to another connection
    /// when the server provably did not process it, and refreshing the token once on
    /// ExpiredProviderToken.
    ///
    /// `headers` is taken, not copied: the authorization goes into the caller's array in place.
    /// The exchange and the reading of its outcome are functions of their own: each value an
    /// async function keeps across an `await` has a slot in its frame, and this one is on every
    /// push's path.
    private func perform(
        pool: HTTP2ConnectionPool,
        headers: consuming HeaderFields,
        body: ByteBuffer?
    ) async throws(APNsError) -> HTTP2Response {
        var retries = Retries()
        while true {
            let token = tokenSigner.currentToken()
            if retries.isFirstAttempt {
                headers.add(.authorization, token.authorization, indexing: .indexable)
            } else {
                // A retry: replace the token the first attempt added (a scan of every header).
                headers.replaceOrAdd(.authorization, token.authorization, indexing: .indexable)
            }
            let result = try await exchange(HTTP2Request(headers: copy headers, body: body), pool: pool)
            if let response = try settle(result, token: token, retries: &retries) { return response }
        }
    }

    /// The retries ``perform(pool:headers:body:)`` has made so far.
    private struct Retries {
        var unprocessed = 0
        var refreshedToken = false

        var isFirstAttempt: Bool { unprocessed == 0 && !refreshedToken }
    }

    /// Leases a stream, sends on it and gives it back.
    private func exchange(_ request: HTTP2Request, pool: HTTP2ConnectionPool) async throws(APNsError) -> Result<HTTP2Response, any Error> {
        let connection: HTTP2Connection
        do {
            connection = try await pool.lease()
        } catch is CancellationError {
            // Only the wait for a stream slot is cancellable; a request already written is not
            // (APNs may have taken it) and ends with its response or the request timeout.
            throw APNsError.transport("cancelled while waiting for a stream")
        } catch {
            throw APNsError.transport(
                error is HTTP2ConnectionPool.ShutdownError ? "client is shut down" : "could not connect to APNs"
            )
        }
        let result: Result<HTTP2Response, any Error>
        do {
            result = .success(try await connection.execute(request))
        } catch {
            result = .failure(error)
        }
        pool.release(connection)
        return result
    }

    /// The response to return, or nil to send again: on another connection when the server
    /// provably did not process the request, or once with a fresh token on ExpiredProviderToken.
    private func settle(
        _ result: Result<HTTP2Response, any Error>, token: APNsProviderToken, retries: inout Retries
    ) throws(APNsError) -> HTTP2Response? {
        switch result {
        case .failure(let failure as HTTP2TransportFailure):
            switch failure {
            case .unprocessed(let why):
                retries.unprocessed += 1
                if retries.unprocessed > maximumUnprocessedRetries {
                    throw APNsError.transport("not processed after \(retries.unprocessed) attempts: \(why)")
                }
                logger.debug("apns request not processed, retrying on another connection", metadata: APNsLogKey.metadata([.why: why]))
                return nil
            case .interrupted(let why):
                throw APNsError.transport(why)
            }
        case .failure(let error):
            throw APNsError.transport("\(type(of: error))")
        case .success(let response):
            if response.status == 403, !retries.refreshedToken,
                APNsErrorBody.decode(response.body).reason == .expiredProviderToken
            {
                retries.refreshedToken = true
                tokenSigner.invalidate(ifIssuedAt: token.issuedAt)
                if tokenSigner.currentToken().issuedAt != token.issuedAt {
                    logger.info("apns ExpiredProviderToken, retrying once with a fresh token")
                    return nil
                }
                logger.info("apns ExpiredProviderToken inside the 20-minute refresh floor; not refreshing (clock skew?)")
            }
            return response
        }
    }

    private func successOrThrow(_ response: HTTP2Response, idHeader: String) throws(APNsError) -> APNsResponse {
        let echoedID = response.headers.first(name: idHeader)
        if (200..<300).contains(response.status) {
            return APNsResponse(
                status: response.status,
                apnsID: echoedID,
                uniqueID: response.headers.first(name: "apns-unique-id")
            )
        }
        let body = APNsErrorBody.decode(response.body)
        throw APNsError(
            outcome: APNsOutcome.classify(status: response.status, reason: body.reason),
            status: response.status,
            reason: body.reason,
            apnsID: echoedID,
            timestamp: body.timestamp,
            detail: ""
        )
    }
}

/// The header names the client sends, each looked up in HPACK's static table once.
extension HeaderName {
    static let authority = HeaderName(":authority")
    static let method = HeaderName(":method")
    static let path = HeaderName(":path")
    static let scheme = HeaderName(":scheme")
    static let apnsChannelId = HeaderName("apns-channel-id")
    static let apnsCollapseId = HeaderName("apns-collapse-id")
    static let apnsExpiration = HeaderName("apns-expiration")
    static let apnsId = HeaderName("apns-id")
    static let apnsPriority = HeaderName("apns-priority")
    static let apnsPushType = HeaderName("apns-push-type")
    static let apnsRequestId = HeaderName("apns-request-id")
    static let apnsTopic = HeaderName("apns-topic")
    static let authorization = HeaderName("authorization")
}
