import Foundation

/// Puts messages back together from their frames: a method frame (`basic.deliver` or
/// `basic.return`), then a content header with the properties and body size, then as many
/// body frames as the size needs. Channels interleave, so each has its own message in progress.
///
/// Pure: frames come in as Swift values, so tests feed it synthetic ones.
struct ContentAssembler {
    /// What the method frame said the content is.
    enum Kind {
        case delivery(consumer: UInt64, tag: UInt64, redelivered: Bool, exchange: String, routingKey: String)
        /// A `mandatory` publish no queue took; the error says why.
        case returned(AMQPError)
    }

    /// A message whose frames all arrived.
    struct Content {
        var kind: Kind
        var channel: UInt16
        /// Nil when the header frame carried none (never seen from RabbitMQ).
        var properties: AMQPProperties?
        var body: Data
    }

    private struct InProgress {
        var kind: Kind
        var properties: AMQPProperties?
        var expected = 0
        var body = Data()
    }

    private var inProgress: [UInt16: InProgress] = [:]

    /// A method frame that carries content arrived on `channel`.
    mutating func begin(_ kind: Kind, channel: UInt16) {
        inProgress[channel] = InProgress(kind: kind)
    }

    /// The content header: returns the message at once when its body is empty.
    mutating func header(channel: UInt16, properties: AMQPProperties?, bodySize: Int) -> Content? {
        // Taken out of the dictionary, not copied, so appending to the body never triggers a
        // copy-on-write of it.
        guard var message = inProgress.removeValue(forKey: channel) else { return nil }
        message.properties = properties
        message.expected = bodySize
        message.body.reserveCapacity(bodySize)
        if bodySize == 0 { return Content(kind: message.kind, channel: channel, properties: properties, body: message.body) }
        inProgress[channel] = message
        return nil
    }

    /// A body frame: returns the message once its body is complete. The bytes are copied.
    mutating func body(channel: UInt16, _ fragment: UnsafeRawBufferPointer) -> Content? {
        guard var message = inProgress.removeValue(forKey: channel) else { return nil }
        if let base = fragment.baseAddress, fragment.count > 0 {
            message.body.append(base.assumingMemoryBound(to: UInt8.self), count: fragment.count)
        }
        if message.body.count >= message.expected {
            return Content(kind: message.kind, channel: channel, properties: message.properties, body: message.body)
        }
        inProgress[channel] = message
        return nil
    }

    /// The connection is gone: half-read messages will be redelivered by the broker.
    mutating func reset() {
        inProgress.removeAll()
    }

    var isEmpty: Bool { inProgress.isEmpty }
}
