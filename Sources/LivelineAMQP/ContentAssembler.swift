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

    /// The messages in progress, by channel. An array searched from the front rather than a
    /// dictionary: a connection's consumers use a channel or two, and each message's three
    /// frames went through four dictionary operations that hashed the channel and moved the
    /// message (its properties, its body) in and out of the table. Here each frame changes the
    /// message in place, and the body is appended to without a copy-on-write.
    private var inProgress: [(channel: UInt16, message: InProgress)] = []

    /// A method frame that carries content arrived on `channel`.
    mutating func begin(_ kind: Kind, channel: UInt16) {
        if let index = position(of: channel) {
            inProgress[index].message = InProgress(kind: kind)
        } else {
            inProgress.append((channel, InProgress(kind: kind)))
        }
    }

    /// The content header: returns the message at once when its body is empty.
    mutating func header(channel: UInt16, properties: AMQPProperties?, bodySize: Int) -> Content? {
        guard let index = position(of: channel) else { return nil }
        inProgress[index].message.properties = properties
        inProgress[index].message.expected = bodySize
        inProgress[index].message.body.reserveCapacity(bodySize)
        return bodySize == 0 ? finish(at: index) : nil
    }

    /// A body frame: returns the message once its body is complete. The bytes are copied.
    mutating func body(channel: UInt16, _ fragment: UnsafeRawBufferPointer) -> Content? {
        guard let index = position(of: channel) else { return nil }
        if let base = fragment.baseAddress, fragment.count > 0 {
            inProgress[index].message.body.append(base.assumingMemoryBound(to: UInt8.self), count: fragment.count)
        }
        return inProgress[index].message.body.count >= inProgress[index].message.expected ? finish(at: index) : nil
    }

    private func position(of channel: UInt16) -> Int? {
        inProgress.firstIndex { $0.channel == channel }
    }

    private mutating func finish(at index: Int) -> Content {
        let (channel, message) = inProgress.remove(at: index)
        return Content(kind: message.kind, channel: channel, properties: message.properties, body: message.body)
    }

    /// The connection is gone: half-read messages will be redelivered by the broker.
    mutating func reset() {
        inProgress.removeAll()
    }

    var isEmpty: Bool { inProgress.isEmpty }
}
