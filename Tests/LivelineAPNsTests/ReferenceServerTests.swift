import Foundation
import LivelineAPNs
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import Testing

/// The client against NIO's own HTTP/2 server, an implementation Liveline did not write.
///
/// The simulator and the client both speak HTTP/2 through ``LivelineHTTP2``, so a misreading of the
/// RFC shared by both would pass every other suite. NIO's server enforces the protocol itself (flow
/// control, stream states, header blocks) and ends the connection on any violation.
@Suite("APNs client against NIO's HTTP/2 server")
struct ReferenceServerTests {
    /// Answers each stream once its request ended: 200 with the `apns-id` echoed, or 400
    /// BadDeviceToken (in a DATA frame) for tokens starting with "bad". Records body sizes.
    final class AnswerHandler: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame.FramePayload
        typealias OutboundOut = HTTP2Frame.FramePayload

        let bodySizes: NIOLockedValueBox<[Int]>
        var path = ""
        var apnsID = ""
        var bodySize = 0

        init(bodySizes: NIOLockedValueBox<[Int]>) {
            self.bodySizes = bodySizes
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .headers(let headers):
                path = headers.headers.first(name: ":path") ?? ""
                apnsID = headers.headers.first(name: "apns-id") ?? ""
                if headers.endStream { answer(context: context) }
            case .data(let data):
                bodySize += data.data.readableBytes
                if data.endStream { answer(context: context) }
            default:
                break
            }
        }

        private func answer(context: ChannelHandlerContext) {
            bodySizes.withLockedValue { $0.append(bodySize) }
            let rejected = path.hasPrefix("/3/device/bad")
            let headers = HPACKHeaders([(":status", rejected ? "400" : "200"), ("apns-id", apnsID)])
            context.write(wrapOutboundOut(.headers(.init(headers: headers, endStream: !rejected))), promise: nil)
            if rejected {
                let body = context.channel.allocator.buffer(string: #"{"reason":"BadDeviceToken"}"#)
                context.write(wrapOutboundOut(.data(.init(data: .byteBuffer(body), endStream: true))), promise: nil)
            }
            context.flush()
        }
    }

    @Test("pushes larger than the server's stream window: bodies whole, answers and reasons read")
    func flowControlAndAnswers() async throws {
        let bodySizes = NIOLockedValueBox<[Int]>([])
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                // A 1,000-byte stream window and 3,000-byte payloads: every body needs WINDOW_UPDATEs.
                channel.configureHTTP2Pipeline(
                    mode: .server,
                    initialLocalSettings: [
                        HTTP2Setting(parameter: .maxConcurrentStreams, value: 10),
                        HTTP2Setting(parameter: .initialWindowSize, value: 1_000),
                    ],
                    inboundStreamInitializer: { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandler(AnswerHandler(bodySizes: bodySizes))
                        }
                    }
                ).map { _ in }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        let client = try APNsClient(
            configuration: APNsClientConfiguration(
                bundleID: "com.example.rides", teamID: "TEAM123456", keyID: "KEY1234567",
                privateKeyPEM: TestKey(teamID: "TEAM123456", keyID: "KEY1234567").privateKeyPEM,
                endpoint: APNsEndpoint(host: "127.0.0.1", port: server.localAddress!.port!, trust: .plaintext),
                pool: .init(maximumConnections: 2)
            )
        )
        let payload = Array(repeating: UInt8(ascii: "x"), count: 3_000)
        let tokens = (0..<40).map { String(format: "%064x", $0) } + ["bad" + String(repeating: "0", count: 61)]
        let outcomes = await withTaskGroup(of: (String, Result<APNsResponse, APNsError>).self) { group in
            for token in tokens {
                group.addTask {
                    (token, await outcome(of: APNsLiveActivityPush(deviceToken: token, payload: payload, priority: .low), via: client))
                }
            }
            return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        await client.shutdown()
        try await server.close()

        #expect(outcomes.count == tokens.count)
        for token in tokens.dropLast() {
            guard case .success(let response)? = outcomes[token] else {
                Issue.record("push to \(token.prefix(8))… failed: \(String(describing: outcomes[token]))")
                continue
            }
            #expect(response.status == 200)
        }
        if case .failure(let error)? = outcomes[tokens.last!] {
            #expect(error.status == 400)
            #expect(error.reason == .badDeviceToken)
        } else {
            Issue.record("the rejected token was not answered with an error")
        }
        #expect(bodySizes.withLockedValue { $0 } == Array(repeating: 3_000, count: tokens.count))
    }
}
