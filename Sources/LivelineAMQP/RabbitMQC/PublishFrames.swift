import CRabbitMQ
import Foundation

// Tests: Tests/LivelineAMQPTests/AMQPIntegrationTests.swift

/// The wire frames of a run of `basic.publish` calls, sent with one `send(2)` instead of
/// three per message.
///
/// `amqp_basic_publish` sends the method, header and body frames with a system call each.
/// Over loopback every such call also runs the receiving side's TCP path, which made the
/// sends 8% of the translator's CPU and woke the broker's reader once per frame. The
/// method and properties are encoded by rabbitmq-c's own encoders, so the bytes are the
/// ones it would have sent. Plain TCP only: a TLS socket must go through the library.
///
/// Lives on the connection's owner thread.
final class PublishFrames {
    private var bytes: [UInt8] = []
    /// The negotiated frame size, which bounds every frame written here.
    private let frameMax: Int
    /// Room for one encoded method or property list; neither may exceed a frame.
    private let scratch: UnsafeMutableRawBufferPointer

    private static let frameEnd: UInt8 = 0xCE
    private static let basicClass: UInt16 = 60

    init(frameMax: Int) {
        self.frameMax = frameMax
        scratch = .allocate(byteCount: frameMax, alignment: 8)
        bytes.reserveCapacity(256 * 1024)
    }

    deinit { scratch.deallocate() }

    var isEmpty: Bool { bytes.isEmpty }

    /// Appends one publish: method, content header and as many body frames as the frame size needs.
    func append(
        channel: UInt16, exchange: amqp_bytes_t, routingKey: amqp_bytes_t, mandatory: Bool,
        properties: inout amqp_basic_properties_t, body: UnsafeRawBufferPointer
    ) throws(AMQPError) {
        let scratchBytes = amqp_bytes_t(len: scratch.count, bytes: scratch.baseAddress)

        var method = amqp_basic_publish_t(ticket: 0, exchange: exchange, routing_key: routingKey, mandatory: mandatory ? 1 : 0, immediate: 0)
        let methodLength = Int(amqp_encode_method(amqp_method_number_t(LIVELINE_BASIC_PUBLISH), &method, scratchBytes))
        guard methodLength >= 0 else { throw AMQPError(.invalidArgument, "basic.publish does not fit in a frame") }
        appendFrameStart(type: UInt8(AMQP_FRAME_METHOD), channel: channel, size: 4 + methodLength)
        append(UInt32(LIVELINE_BASIC_PUBLISH))
        bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[0..<methodLength]))
        bytes.append(Self.frameEnd)

        let propertiesLength = Int(amqp_encode_properties(Self.basicClass, &properties, scratchBytes))
        guard propertiesLength >= 0 else { throw AMQPError(.invalidArgument, "message properties do not fit in a frame") }
        appendFrameStart(type: UInt8(AMQP_FRAME_HEADER), channel: channel, size: 12 + propertiesLength)
        append(Self.basicClass)
        append(UInt16(0))  // weight
        append(UInt64(body.count))
        bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[0..<propertiesLength]))
        bytes.append(Self.frameEnd)

        // Frame overhead: 7 bytes of header and the end octet.
        let maxPayload = frameMax - 8
        var offset = 0
        while offset < body.count {
            let end = min(body.count, offset + maxPayload)
            appendFrameStart(type: UInt8(AMQP_FRAME_BODY), channel: channel, size: end - offset)
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: body[offset..<end]))
            bytes.append(Self.frameEnd)
            offset = end
        }
    }

    /// Sends everything appended, waiting for socket room as needed, then empties the buffer.
    ///
    /// The whole run goes out before anything else may be written: a heartbeat or ack sent by
    /// rabbitmq-c between two halves of a frame would corrupt the stream. A broker that takes
    /// nothing for `timeout` counts as lost.
    func send(to socket: Int32, timeout: Duration) throws(AMQPError) {
        defer { bytes.removeAll(keepingCapacity: true) }
        let deadline = ContinuousClock.now + timeout
        var sent = 0
        while sent < bytes.count {
            let result = bytes.withUnsafeBytes { buffer in
                Foundation.send(socket, buffer.baseAddress! + sent, buffer.count - sent, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if result > 0 {
                sent += result
                continue
            }
            let error = errno
            guard result < 0, error == EAGAIN || error == EWOULDBLOCK || error == EINTR else {
                throw AMQPError(.connectionLost, "send failed: \(String(cString: strerror(error)))")
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else {
                throw AMQPError(.connectionLost, "the broker took no data for \(timeout)")
            }
            var writable = pollfd(fd: socket, events: Int16(POLLOUT), revents: 0)
            _ = poll(&writable, 1, Int32(min(1_000, max(1, left.components.seconds * 1_000 + left.components.attoseconds / 1_000_000_000_000_000))))
        }
    }

    private func appendFrameStart(type: UInt8, channel: UInt16, size: Int) {
        bytes.append(type)
        append(channel)
        append(UInt32(size))
    }

    private func append<Integer: FixedWidthInteger>(_ value: Integer) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }
}
