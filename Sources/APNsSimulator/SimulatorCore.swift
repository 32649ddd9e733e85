import Foundation
import LivelineCodecs
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK

// Tests: Tests/LivelineAPNsTests/DevicePushTests.swift, Tests/LivelineAPNsTests/SimulatorInspectionTests.swift, Tests/LivelineAPNsTests/BroadcastTests.swift

/// One parsed request as the stream handler hands it over.
struct SimulatorRequest: Sendable {
    var method: String
    var path: String
    var headers: HPACKHeaders
    var body: ByteBuffer?
}

/// The APNs behaviour: routing, validation in APNs' order, provider-token checks, faults, recording.
/// Shared by every connection; all mutable state sits in one `NIOLockedValueBox`.
final class SimulatorCore: Sendable {
    let configuration: APNsSimulatorConfiguration
    let state: NIOLockedValueBox<SimulatorState>
    private let verifier: ProviderTokenVerifier

    static let knownPushTypes: Set<String> = [
        "alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity",
        "pushtotalk", "widgets", "controls",
    ]

    init(configuration: APNsSimulatorConfiguration) throws {
        self.configuration = configuration
        self.state = NIOLockedValueBox(SimulatorState())
        self.verifier = try ProviderTokenVerifier(trustedKeys: configuration.trustedKeys)
    }

    func handle(_ request: SimulatorRequest) -> SimulatorReply {
        let path = request.path
        if path.hasPrefix("/3/device/") {
            return devicePush(request, token: String(path.dropFirst("/3/device/".count)))
        }
        if path.hasPrefix("/4/broadcasts/apps/") {
            return broadcast(request, bundleID: String(path.dropFirst("/4/broadcasts/apps/".count)))
        }
        if path.hasPrefix("/1/apps/") {
            return channelManagement(request)
        }
        if path.hasPrefix("/_sim/") {
            return inspection(request)
        }
        return finish(.error(404, "BadPath"))
    }

    // MARK: Device pushes

    private func devicePush(_ request: SimulatorRequest, token: String) -> SimulatorReply {
        let headers = request.headers
        let requestedID = headers.first(name: "apns-id")
        let echoedID = requestedID ?? UUID().uuidString
        let idHeader = ("apns-id", echoedID)
        guard request.method == "POST" else { return finish(.error(405, "MethodNotAllowed", id: idHeader)) }
        if let duplicate = duplicateAPNsHeader(headers) {
            _ = duplicate
            return finish(.error(400, "DuplicateHeaders", id: idHeader))
        }
        if token.isEmpty { return finish(.error(400, "MissingDeviceToken", id: idHeader)) }
        // APNs tokens are hex; today 64 characters, but Apple says not to assume a fixed length.
        guard (64...200).contains(token.utf8.count), Hex.isHex(token) else {
            return finish(.error(400, "BadDeviceToken", id: idHeader))
        }
        if let requestedID, UUID(hyphenated: requestedID) == nil {
            return finish(.error(400, "BadMessageId", id: idHeader))
        }
        if let failure = authenticate(headers) { return finish(.error(403, failure, id: idHeader)) }
        guard let topic = headers.first(name: "apns-topic"), !topic.isEmpty else {
            return finish(.error(400, "MissingTopic", id: idHeader), authenticated: true)
        }
        let pushType = headers.first(name: "apns-push-type")
        if let pushType, !Self.knownPushTypes.contains(pushType) {
            return finish(.error(400, "InvalidPushType", id: idHeader), authenticated: true)
        }
        if pushType == "liveactivity", !topic.hasSuffix(".push-type.liveactivity") {
            return finish(.error(400, "TopicDisallowed", id: idHeader), authenticated: true)
        }
        if let failure = validateCommon(headers, body: request.body) {
            var reply = failure
            reply.headers.insert(idHeader, at: 0)
            return finish(reply, authenticated: true)
        }
        if let collapseID = headers.first(name: "apns-collapse-id"), collapseID.utf8.count > 64 {
            return finish(.error(400, "BadCollapseId", id: idHeader), authenticated: true)
        }
        return accept(
            request,
            recipient: token,
            topic: topic,
            pushType: pushType,
            idHeader: idHeader,
            isChannel: false
        )
    }

    // MARK: Broadcast

    private func broadcast(_ request: SimulatorRequest, bundleID: String) -> SimulatorReply {
        let headers = request.headers
        let requestID = headers.first(name: "apns-request-id") ?? UUID().uuidString
        let idHeader = ("apns-request-id", requestID)
        guard request.method == "POST" else { return finish(.error(405, "MethodNotAllowed", id: idHeader)) }
        if duplicateAPNsHeader(headers) != nil { return finish(.error(400, "DuplicateHeaders", id: idHeader)) }
        if let failure = authenticate(headers) { return finish(.error(403, failure, id: idHeader)) }
        guard let channelID = headers.first(name: "apns-channel-id"), !channelID.isEmpty else {
            return finish(.error(400, "MissingChannelId", id: idHeader), authenticated: true)
        }
        guard Base64URL.decode(channelID) != nil || Data(base64Encoded: channelID) != nil else {
            return finish(.error(400, "BadChannelId", id: idHeader), authenticated: true)
        }
        let channel = state.withLockedValue { $0.channels[channelID] }
        guard let channel, channel.bundleID == bundleID else {
            return finish(.error(400, "ChannelNotRegistered", id: idHeader), authenticated: true)
        }
        // Apple: a broadcast carries apns-expiration, and 0 on a channel that stores no message.
        guard let expiration = headers.first(name: "apns-expiration").flatMap({ Int64($0) }), expiration >= 0,
            channel.storagePolicy != 0 || expiration == 0
        else { return finish(.error(400, "BadExpirationDate", id: idHeader), authenticated: true) }
        if let pushType = headers.first(name: "apns-push-type"), pushType != "liveactivity" {
            return finish(.error(400, "InvalidPushType", id: idHeader), authenticated: true)
        }
        if let failure = validateCommon(headers, body: request.body) {
            var reply = failure
            reply.headers.insert(idHeader, at: 0)
            return finish(reply, authenticated: true)
        }
        return accept(
            request,
            recipient: channelID,
            topic: bundleID,
            pushType: headers.first(name: "apns-push-type"),
            idHeader: idHeader,
            isChannel: true
        )
    }

    // MARK: Channel management

    private func channelManagement(_ request: SimulatorRequest) -> SimulatorReply {
        let headers = request.headers
        let requestID = headers.first(name: "apns-request-id") ?? UUID().uuidString
        let idHeader = ("apns-request-id", requestID)
        // /1/apps/<bundle>/channels or /1/apps/<bundle>/all-channels
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: true)
        guard parts.count == 4, parts[0] == "1", parts[1] == "apps" else {
            return finish(.error(404, "BadPath", id: idHeader))
        }
        let bundleID = String(parts[2])
        if let failure = authenticate(headers) { return finish(.error(403, failure, id: idHeader)) }
        switch (parts[3], request.method) {
        case ("all-channels", "GET"):
            let ids = state.withLockedValue { state in
                state.channelOrder.filter { state.channels[$0]?.bundleID == bundleID }
            }
            let list = ids.map { "\"\($0)\"" }.joined(separator: ",")
            return finish(.json(200, #"{"channels":[\#(list)]}"#, headers: [idHeader]), authenticated: true)
        case ("channels", "POST"):
            guard let body = request.body,
                let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
            else { return finish(.error(400, "BadRequest", id: idHeader), authenticated: true) }
            guard let pushType = object["push-type"] as? String else {
                return finish(.error(400, "MissingPushType", id: idHeader), authenticated: true)
            }
            guard pushType == "LiveActivity" else {
                return finish(.error(400, "InvalidPushType", id: idHeader), authenticated: true)
            }
            let policy = (object["message-storage-policy"] as? NSNumber)?.intValue ?? 0
            guard policy == 0 || policy == 1 else {
                return finish(.error(400, "InvalidPolicy", id: idHeader), authenticated: true)
            }
            var raw = [UInt8](repeating: 0, count: 16)
            for index in raw.indices { raw[index] = UInt8.random(in: 0...255) }
            let channelID = Data(raw).base64EncodedString()
            let created = state.withLockedValue { state -> Bool in
                // Apple allows 10,000 channels per app and environment.
                guard state.channels.values.filter({ $0.bundleID == bundleID }).count < 10_000 else { return false }
                state.channels[channelID] = .init(bundleID: bundleID, storagePolicy: policy, createdAt: Date())
                state.channelOrder.append(channelID)
                return true
            }
            guard created else { return finish(.error(400, "CannotCreateChannelConfig", id: idHeader), authenticated: true) }
            return finish(
                SimulatorReply(status: 201, headers: [idHeader, ("apns-channel-id", channelID)]),
                authenticated: true
            )
        case ("channels", "GET"), ("channels", "DELETE"):
            guard let channelID = headers.first(name: "apns-channel-id"), !channelID.isEmpty else {
                return finish(.error(400, "MissingChannelId", id: idHeader), authenticated: true)
            }
            let isDelete = request.method == "DELETE"
            let found = state.withLockedValue { state -> SimulatorState.Channel? in
                guard let channel = state.channels[channelID], channel.bundleID == bundleID else { return nil }
                if isDelete {
                    state.channels[channelID] = nil
                    state.channelOrder.removeAll { $0 == channelID }
                }
                return channel
            }
            guard let found else {
                return finish(.error(404, "ChannelNotRegistered", id: idHeader), authenticated: true)
            }
            if isDelete {
                return finish(SimulatorReply(status: 204, headers: [idHeader]), authenticated: true)
            }
            return finish(
                .json(
                    200,
                    #"{"message-storage-policy":\#(found.storagePolicy),"push-type":"LiveActivity"}"#,
                    headers: [idHeader]
                ),
                authenticated: true
            )
        case ("channels", _), ("all-channels", _):
            return finish(.error(405, "MethodNotAllowed", id: idHeader))
        default:
            return finish(.error(404, "BadPath", id: idHeader))
        }
    }

    // MARK: Inspection routes for the quickstart (no auth)

    private func inspection(_ request: SimulatorRequest) -> SimulatorReply {
        guard request.method == "GET" else { return .error(405, "MethodNotAllowed") }
        if request.path.hasPrefix("/_sim/devices/") {
            let token = String(request.path.dropFirst("/_sim/devices/".count))
            let deliveries = state.withLockedValue { $0.deliveries(toDevice: token) }
            return .json(200, Self.json(deliveries))
        }
        if request.path.hasPrefix("/_sim/channels/") {
            let channelID = String(request.path.dropFirst("/_sim/channels/".count)).removingPercentEncoding ?? ""
            let deliveries = state.withLockedValue { $0.channelDeliveries[channelID] ?? [] }
            return .json(200, Self.json(deliveries))
        }
        if request.path.hasPrefix("/_sim/receipts") {
            return receipts(request.path)
        }
        if request.path == "/_sim/stats" {
            let stats = state.withLockedValue { $0.statistics }
            let byStatus = stats.responsesByStatus.sorted { $0.key < $1.key }
                .map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",")
            return .json(
                200,
                #"{"requests":\#(stats.requests),"responsesByStatus":{\#(byStatus)},"connectionsAccepted":\#(stats.connectionsAccepted),"goAwaysSent":\#(stats.goAwaysSent),"maximumObservedConcurrentStreams":\#(stats.maximumObservedConcurrentStreams)}"#
            )
        }
        return .error(404, "BadPath")
    }

    /// `GET /_sim/receipts?from=N`: the device pushes from arrival N on, at most
    /// ``receiptsPerPage``, one line each: `<token> <apns-id> <microseconds since 1970>`. The
    /// caller's next `from` is N plus the lines it got.
    private func receipts(_ path: String) -> SimulatorReply {
        let query = path.dropFirst("/_sim/receipts".count)
        let from: Int
        if query.isEmpty {
            from = 0
        } else if query.hasPrefix("?from="), let value = Int(query.dropFirst("?from=".count)), value >= 0 {
            from = value
        } else {
            return .error(400, "BadQuery")
        }
        // Copied out under the lock: a slice would hold the whole log, and the next push's
        // append would then copy all of it.
        let page = state.withLockedValue { state in
            Array(state.deviceArrivals[min(from, state.deviceArrivals.count)..<min(from + Self.receiptsPerPage, state.deviceArrivals.count)])
        }
        var text = ""
        text.reserveCapacity(page.count * 120)
        for delivery in page {
            let microseconds = Int64((delivery.receivedAt.timeIntervalSince1970 * 1e6).rounded())
            text += "\(delivery.recipient) \(delivery.apnsID) \(microseconds)\n"
        }
        var reply = SimulatorReply(status: 200, headers: [("content-type", "text/plain")])
        reply.body = Array(text.utf8)
        return reply
    }

    /// Lines per `/_sim/receipts` answer: about 1 MB.
    static let receiptsPerPage = 10_000

    private static func json(_ deliveries: [APNsSimulatorDelivery]) -> String {
        struct Wire: Encodable {
            var recipient: String
            var payload: String
            var headers: [String: String]
            var priority: Int
            var pushType: String?
            var topic: String?
            var apnsID: String
            var receivedAt: Double
        }
        let wire = deliveries.map {
            Wire(
                recipient: $0.recipient,
                payload: $0.payloadString,
                headers: $0.headers,
                priority: $0.priority,
                pushType: $0.pushType,
                topic: $0.topic,
                apnsID: $0.apnsID,
                receivedAt: $0.receivedAt.timeIntervalSince1970
            )
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(wire)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
    }

    // MARK: Shared steps

    /// Returns the 403 reason, or `nil` when the provider token is acceptable.
    private func authenticate(_ headers: HPACKHeaders) -> String? {
        guard let authorization = headers.first(name: "authorization") else { return "MissingProviderToken" }
        guard authorization.hasPrefix("bearer ") || authorization.hasPrefix("Bearer ") else {
            return "InvalidProviderToken"
        }
        // Nearly every request carries the same token as the one before: compare, not hash.
        var verdict = state.withLockedValue { state in
            state.lastToken?.authorization == authorization ? state.lastToken?.verdict : nil
        }
        if verdict == nil {
            let jwt = String(authorization.dropFirst("bearer ".count))
            let known = state.withLockedValue { $0.tokenVerdicts[jwt] }
            let fresh = known ?? verifier.verify(jwt: jwt)
            state.withLockedValue { state in
                if state.tokenVerdicts.count > 10_000 { state.tokenVerdicts.removeAll() }
                state.tokenVerdicts[jwt] = fresh
                state.lastToken = (authorization, fresh)
            }
            verdict = fresh
        }
        switch verdict! {
        case .invalid(let reason):
            return reason
        case .valid(let claims):
            if Date().timeIntervalSince1970 - claims.issuedAt > configuration.providerTokenMaximumAge {
                return "ExpiredProviderToken"
            }
            return nil
        }
    }

    /// Priority, expiration and payload checks shared by device and broadcast pushes.
    private func validateCommon(_ headers: HPACKHeaders, body: ByteBuffer?) -> SimulatorReply? {
        if let priority = headers.first(name: "apns-priority"), !["1", "5", "10"].contains(priority) {
            return .error(400, "BadPriority")
        }
        if let expiration = headers.first(name: "apns-expiration"), Int(expiration) == nil {
            return .error(400, "BadExpirationDate")
        }
        let size = body?.readableBytes ?? 0
        if size == 0 { return .error(400, "PayloadEmpty") }
        if size > configuration.maximumPayloadSize { return .error(413, "PayloadTooLarge") }
        // A cheap shape check (a JSON object) rather than a full parse: the hot path must stay light.
        let view = body!.readableBytesView
        let first = view.first { !Self.isSpace($0) }
        let last = view.last { !Self.isSpace($0) }
        if first != UInt8(ascii: "{") || last != UInt8(ascii: "}") {
            return .error(400, "BadRequest")
        }
        return nil
    }

    private func accept(
        _ request: SimulatorRequest,
        recipient: String,
        topic: String?,
        pushType: String?,
        idHeader: (String, String),
        isChannel: Bool
    ) -> SimulatorReply {
        let record = configuration.recordDeliveries
        let delivery: APNsSimulatorDelivery? =
            record
            ? APNsSimulatorDelivery(
                recipient: recipient,
                payload: request.body.map { Array($0.readableBytesView) } ?? [],
                headers: Self.recordedHeaders(request.headers),
                priority: request.headers.first(name: "apns-priority").flatMap(Int.init) ?? 10,
                pushType: pushType,
                topic: topic,
                apnsID: idHeader.1,
                receivedAt: Date()
            ) : nil
        // A start that names `input-push-channel` makes the device listen to that channel; an
        // end on a channel stops its listeners. Parsed only when the bytes say so.
        let listening = Self.channelChange(request.body, isChannel: isChannel)
        var reply = state.withLockedValue { state -> SimulatorReply in
            let fault = state.takeFault(forDevice: isChannel ? nil : recipient)
            var delay = 0
            switch fault {
            case .none:
                break
            case .latency(let milliseconds):
                delay = milliseconds
            case .resetConnection:
                state.statistics.requests += 1
                state.statistics.connectionsReset += 1
                return SimulatorReply(status: 0, resetConnection: true)
            case .some(let fault):
                var reply = Self.reply(for: fault, idHeader: idHeader)
                state.count(status: reply.status)
                reply.authenticated = true
                return reply
            }
            if let delivery {
                if isChannel {
                    state.channelDeliveries[recipient, default: []].append(delivery)
                } else {
                    state.deviceDeliveries[recipient, default: []].append(delivery)
                    state.deviceArrivals.append(delivery)
                }
            }
            if let listening {
                let position = state.channelDeliveries[isChannel ? recipient : listening]?.count ?? 0
                if isChannel {
                    if state.channelEnds[recipient] == nil { state.channelEnds[recipient] = position - 1 }  // the activities ended
                } else if state.channels[listening] != nil {
                    state.listening[recipient, default: []].append((listening, position))
                }
            }
            state.count(status: 200)
            return SimulatorReply(status: 200, headers: [idHeader], delayMilliseconds: delay)
        }
        reply.authenticated = true
        if reply.status == 200, configuration.sendUniqueID {
            // Like the sandbox: a unique id to look the push up in the delivery log.
            reply.headers.append(("apns-unique-id", UUID().uuidString.lowercased()))
        }
        return reply
    }

    /// For a device push, the channel a start tells the new activity to listen on; for a
    /// broadcast, the channel id marker `""` when it ends the activities. nil otherwise.
    private static func channelChange(_ body: ByteBuffer?, isChannel: Bool) -> String? {
        // The common push has neither marker: it is searched in place, never copied.
        guard let body, contains(body, isChannel ? endMarker : inputPushChannelMarker),
            let aps = (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any])?["aps"]
                as? [String: Any]
        else { return nil }
        if isChannel { return aps["event"] as? String == "end" ? "" : nil }
        guard aps["event"] as? String == "start" else { return nil }
        return aps["input-push-channel"] as? String
    }

    /// Whether `marker` occurs in `body`'s bytes. By hand: `firstRange(of:)` on a
    /// `ByteBufferView` runs unspecialized, and took a third of the simulator's CPU in a
    /// game's start for 100,000 devices.
    private static func contains(_ body: ByteBuffer, _ marker: [UInt8]) -> Bool {
        body.withUnsafeReadableBytes { bytes in
            guard let base = bytes.baseAddress, let first = marker.first, bytes.count >= marker.count else { return false }
            var from = 0
            let lastStart = bytes.count - marker.count
            while from <= lastStart, let found = memchr(base + from, Int32(first), lastStart - from + 1) {
                let at = base.distance(to: UnsafeRawPointer(found))
                if memcmp(base + at, marker, marker.count) == 0 { return true }
                from = at + 1
            }
            return false
        }
    }

    private static let endMarker = Array(#""end""#.utf8)
    private static let inputPushChannelMarker = Array("input-push-channel".utf8)

    private static func reply(for fault: APNsSimulatorFault, idHeader: (String, String)) -> SimulatorReply {
        switch fault {
        case .unregistered:
            let millis = Date().millisecondsSince1970
            return .json(410, #"{"reason":"Unregistered","timestamp":\#(millis)}"#, headers: [idHeader])
        case .badDeviceToken:
            return .error(400, "BadDeviceToken", id: idHeader)
        case .deviceTokenNotForTopic:
            return .error(400, "DeviceTokenNotForTopic", id: idHeader)
        case .tooManyRequests:
            return .error(429, "TooManyRequests", id: idHeader)
        case .internalServerError:
            return .error(500, "InternalServerError", id: idHeader)
        case .serviceUnavailable:
            return .error(503, "ServiceUnavailable", id: idHeader)
        case .expiredProviderToken:
            return .error(403, "ExpiredProviderToken", id: idHeader)
        case .status(let status, let reason):
            return .error(status, reason, id: idHeader)
        case .latency, .resetConnection:
            return SimulatorReply(status: 200, headers: [idHeader])
        }
    }

    private func finish(_ reply: SimulatorReply, authenticated: Bool = false) -> SimulatorReply {
        state.withLockedValue { $0.count(status: reply.status) }
        var reply = reply
        reply.authenticated = authenticated
        return reply
    }

    private func duplicateAPNsHeader(_ headers: HPACKHeaders) -> String? {
        // A handful of headers: a linear scan beats hashing into a Set on every request.
        var seen: [String] = []
        seen.reserveCapacity(10)
        for (name, _, _) in headers where name.hasPrefix("apns-") || name == "authorization" {
            if seen.contains(name) { return name }
            seen.append(name)
        }
        return nil
    }

    private static func recordedHeaders(_ headers: HPACKHeaders) -> [String: String] {
        var result: [String: String] = [:]
        for (name, value, _) in headers where !name.hasPrefix(":") && name != "authorization" {
            result[name.lowercased()] = value
        }
        return result
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 32 || byte == 9 || byte == 10 || byte == 13
    }
}
